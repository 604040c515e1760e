"""Submission intake: a folder, a zip or single files -> one source text per exercise.

Only the graded files are ever read as code (``attention.py`` … or a notebook with the
same stem); everything else in a submission (``conftest.py``, ``numpy.py``,
``__pycache__``) is ignored. Nothing here executes student code: sources are parsed with
``ast`` to report syntax errors early and to find banned APIs.

Everything read is bounded before it is read, and only files that really lie inside the
submission are read: links are never followed (a symbolic link, a hard link, a FIFO or a
zip member that is a link is *refused*, which costs only that exercise), sizes come from
``lstat`` or the zip's directory, and one :class:`ReadAllowance` caps the decompressed bytes and
the entries of the whole submission (folders, zips, zips inside folders, notebooks).

Four modules below this one do the work: :mod:`.reading` (listing and bounded reading),
:mod:`.notebooks` (a notebook's code), :mod:`.banned` (forbidden APIs, found statically) and
:mod:`.near_misses` (what was found instead of a missing file, and why it was not taken).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder import textsafe
from autograder.contract import DEFAULT, Exercise
from autograder.intake import near_misses
from autograder.intake.banned import find_banned, scan
from autograder.intake.notebooks import notebook_to_source, read_notebook
from autograder.intake.reading import (MAX_FILE_BYTES, Listing, ReadAllowance, Refused, TooBig,
                                       list_submission, size_text)


@dataclass
class Found:
    """One exercise's file. ``kind``: "found" (``source`` set), "missing" or "refused"
    (a file is there but is not read: a link, too large, an unreadable notebook …);
    ``problem`` says why in words for the student."""
    exercise: Exercise
    source: str | None = None             # Python source, when found and readable
    origin: str = ""                       # path inside the submission, for messages
    problem: str | None = None             # why the exercise cannot be graded
    notes: list[str] = field(default_factory=list)
    banned: list[str] = field(default_factory=list)
    imports: frozenset[str] = frozenset()  # top-level packages the source's import statements name
    refused: bool = False                  # a file was there but was not accepted
    cells: tuple[int, ...] = ()            # a notebook: the line each of its cells starts on in source

    @property
    def kind(self) -> str:
        if self.source is not None:
            return "found"
        return "refused" if self.refused else "missing"


@dataclass
class Submission:
    found: dict[str, Found]                # by exercise id


def collect(path: str | Path, exercises: tuple[Exercise, ...] = DEFAULT,
            budget: ReadAllowance | None = None) -> Submission:
    """Find and read each exercise's file in a submission (folder, .zip, .py or .ipynb)."""
    budget = budget or ReadAllowance()
    wanted = {name for ex in exercises for name in (ex.filename, ex.notebook)}
    listing = Listing()
    try:
        list_submission(Path(path), wanted, budget, listing)
    except FileNotFoundError:
        pass                                          # nothing submitted: every file is missing
    except (OSError, RecursionError, ValueError) as exc:
        listing.truncated = f"the submission could not be listed ({type(exc).__name__})"
    return Submission({ex.id: _find_safely(ex, listing, budget) for ex in exercises})


# --------------------------------------------------------------------------- choosing a file

def _find_safely(ex: Exercise, listing: Listing, budget: ReadAllowance) -> Found:
    """``_find``, where anything unexpected costs only this exercise."""
    try:
        return _find(ex, listing, budget)
    except (Refused, OSError, ValueError, RecursionError, MemoryError) as exc:
        message = str(exc) if isinstance(exc, Refused) else f"could not be read ({type(exc).__name__})"
        return Found(ex, origin=ex.filename, problem=f"refused: {message}", refused=True)


def _find(ex: Exercise, listing: Listing, budget: ReadAllowance) -> Found:
    files = listing.files
    candidates = [rel for rel in files if PurePosixPath(rel).name in (ex.filename, ex.notebook)]
    if not candidates:
        return _missing(ex, listing)
    # shallowest first, .py before .ipynb, then alphabetical: deterministic
    candidates.sort(key=lambda rel: (rel.count("/"), rel.endswith(".ipynb"), rel))
    chosen = candidates[0]
    found = Found(ex, origin=chosen)
    if len(candidates) > 1:
        found.notes.append(f"several candidates for {ex.filename}; graded {_printable(chosen)}")
    entry = files[chosen]
    if entry.refusal or entry.read is None:
        return _refuse(found, entry.refusal or f"{chosen} could not be read")
    notebook = chosen.endswith(".ipynb")
    # A notebook's saved outputs (plots) never count against a limit: the file is read within
    # what is left of the whole submission's budget, its code cells are what MAX_FILE_BYTES caps.
    limit = budget.bytes_left if notebook else MAX_FILE_BYTES
    try:
        data = entry.read(limit)
        budget.charge(len(data), chosen)
    except TooBig as exc:
        return _refuse(found, f"{chosen}: the submission is larger than {size_text(budget.max_bytes)} in "
                              "total" if notebook else str(exc))
    except Refused as exc:
        return _refuse(found, str(exc))
    text = data.decode("utf-8-sig", errors="replace")         # a BOM (Windows editors) is fine
    if notebook:
        read, problem = read_notebook(text, MAX_FILE_BYTES)
        if read is None:
            return _refuse(found, f"{chosen} {problem}")
        text, found.cells = read.source, read.cells
    found.source = text
    facts = scan(text, ex)                                      # one parse: banned APIs, imports
    found.banned, found.imports = facts.banned, facts.imports
    return found


def _refuse(found: Found, why: str) -> Found:
    found.problem, found.refused = f"refused: {_printable(why)}", True
    return found


def _printable(text: str) -> str:
    """Messages stay on one line: control characters (a newline in a folder name) are shown
    escaped (names are escaped when listed already: this changes nothing in them)."""
    return textsafe.one_line(text, None)


def _missing(ex: Exercise, listing: Listing) -> Found:
    instead = near_misses.explain(ex, listing.noticed)
    found = Found(ex, problem=f"{ex.filename} was not found in the submission "
                              f"(expected a file named exactly {ex.filename} or {ex.notebook})"
                              + (f"; {_printable(instead)}" if instead else ""))
    if listing.truncated:
        return _refuse(found, f"{listing.truncated}; {ex.filename} was not found in the part read")
    links = [s.split(" (")[0] for s in listing.skipped if "symbolic link" in s]
    if links:
        return _refuse(found, f"{', '.join(links[:5])} is a symbolic link (never followed); "
                              f"{ex.filename} was not found elsewhere")
    return found
