"""Why an exercise's file was not found: what the submission holds instead, and why it was not
taken (never a bare "missing").

The listing (:mod:`.reading`) notices files that might have been meant as a graded one
(:class:`~autograder.intake.reading.Noticed`); here each is sorted into what it most likely is,
for one exercise:

* a **near name**: ``attention (1).py``, ``Attention.py``, ``attention.py.txt``,
  ``attention_final.py``, ``attention-checkpoint.ipynb`` — only the exact name is graded;
* a **zip inside the zip**: never opened (one level of zip only);
* a **notebook without the stem**: ``ex1_attention.ipynb``, ``Untitled.ipynb`` — a notebook is
  graded only under the exercise file's own name;
* another **Python file**: ``solution.py`` — named only when nothing closer was found.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterable

from autograder.contract import EXERCISES, Exercise
from autograder.intake.reading import Noticed

MAX_SHOWN = 4
# Files the release itself holds next to a student's: never meant as an exercise's file.
RELEASE_FILES = frozenset({"check.py", "conftest.py", "__init__.py", "setup.py"})
_COPY_MARKS = re.compile(r"(?:\s*\(\d+\)|[\s._-]*(?:copy|final|checkpoint|old|new|backup|v?\d+))+$")


class Miss(enum.IntEnum):
    """What a noticed file most likely is, closest first."""
    NEAR_NAME = 1
    NESTED_ZIP = 2
    OTHER_NOTEBOOK = 3
    OTHER_PYTHON = 4


@dataclass(frozen=True)
class NearMiss:
    rel: str
    miss: Miss


def reason(miss: Miss, ex: Exercise) -> str:
    """Why files of this kind were not taken for ``ex``, in words for the student."""
    if miss is Miss.NEAR_NAME:
        return f"only a file named exactly {ex.filename} or {ex.notebook} is graded; rename it"
    if miss is Miss.NESTED_ZIP:
        return (f"a zip inside a zip is not opened; put {ex.filename} in the zip you submit, or "
                "submit the files themselves")
    if miss is Miss.OTHER_NOTEBOOK:
        return (f"a notebook is graded only when named exactly {ex.notebook}; the release's "
                f"notebook is not graded, submit {ex.filename}")
    return f"only a file named exactly {ex.filename} is graded for {ex.id}"


def classify(ex: Exercise, item: Noticed) -> NearMiss | None:
    """What ``item`` may have been meant as, for ``ex``; None when it is nothing of the kind
    (another exercise's own file or notebook, the release's own files)."""
    name = PurePosixPath(item.rel).name
    if name in _EXACT_NAMES:
        return None
    if _stem(name) == ex.module:
        return NearMiss(item.rel, Miss.NEAR_NAME)
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".zip" and item.in_zip:
        return NearMiss(item.rel, Miss.NESTED_ZIP)
    if _mentions_another(item.rel, ex):
        return None
    if suffix == ".ipynb":
        return NearMiss(item.rel, Miss.OTHER_NOTEBOOK)
    if suffix == ".py" and name not in RELEASE_FILES and not name.startswith("test_"):
        return NearMiss(item.rel, Miss.OTHER_PYTHON)
    return None


def explain(ex: Exercise, noticed: Iterable[Noticed]) -> str | None:
    """``"found instead: a, b (not taken: why); c (not taken: why)"``, the closest kinds first
    (other Python files only when nothing closer was found), or None when nothing was."""
    misses = [m for m in (classify(ex, item) for item in noticed) if m is not None]
    kinds = sorted({m.miss for m in misses})
    if len(kinds) > 1:
        kinds = [k for k in kinds if k is not Miss.OTHER_PYTHON]
    parts = []
    for kind in kinds:
        names = sorted((m.rel for m in misses if m.miss is kind), key=lambda rel: (not _mentions(rel, ex), rel))
        more = f" and {len(names) - MAX_SHOWN} more" if len(names) > MAX_SHOWN else ""
        parts.append(f"{', '.join(names[:MAX_SHOWN])}{more} (not taken: {reason(kind, ex)})")
    return "found instead: " + "; ".join(parts) if parts else None


def _stem(name: str) -> str:
    """``"Attention (1).PY"`` -> ``"attention"``: the name without its extensions (a ``.txt``
    added by an editor too), its case, and the marks of a copy."""
    lower = name.lower().strip()
    for suffix in (".txt", ".py", ".ipynb", ".pyw"):
        lower = lower.removesuffix(suffix).strip()
    return _COPY_MARKS.sub("", lower).strip()


def _mentions(rel: str, ex: Exercise) -> bool:
    """Whether a path names the exercise (its id, folder or module): shown first."""
    lower = rel.lower()
    return bool(re.search(rf"\b{ex.id}\b", lower.replace("_", " "))) or ex.folder in lower or ex.module in lower


def _mentions_another(rel: str, ex: Exercise) -> bool:
    """A path that names another exercise and not this one (``ex1_attention.ipynb`` for ex3)."""
    return not _mentions(rel, ex) and any(_mentions(rel, other) for other in EXERCISES if other.id != ex.id)


_EXACT_NAMES = frozenset(name for ex in EXERCISES for name in (ex.filename, ex.notebook))
