"""Mutants as patches (the format and the patching: ``autograder/audit/mutants.py``, which
``python -m autograder audit`` uses too); this module keeps the kit's tests' names, bound to
this checkout.

A mutant file ``tests/submissions/<ex>/mutants/<case>.diff`` is

    # expect-fail: <words>[|<words> …]      the test(s) the bug must fail (substrings of titles)
    # breaks: <name>[, <name>:<property>]    optional: what it breaks besides the functions its
                                             patch changes and their callers (tests/suite_covers.py)
    # cause-id: <ids> | none (why)           the causes a right "Likely cause" may name (tests/hints.py)
    # mutant: <what the bug is>              optional further comment lines
    @@ -40,3 +40,3 @@                        a unified diff against the solution as a
     context                                 student submits it (markers removed)
    -old line
    +new line
"""
from __future__ import annotations

from pathlib import Path

from autograder.audit import mutants as _kit
from autograder.audit.mutants import MARKERS, PatchError, apply_patch, as_submitted, header, make_patch  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


def mutant_source(path: Path) -> str:
    """The student file a mutant stands for: its exercise's solution with the patch applied."""
    return _kit.mutant_source(path, ROOT)


def label(path: Path) -> tuple[str, ...] | None:
    """The ``# cause-id:`` ids of a mutant (the causes any of which is a right hint), ``()`` for
    ``none (why)``, None when the header has no such line."""
    return _kit.cause_label(path.read_text())


def expected_failures(path: Path) -> list[str]:
    """The ``# expect-fail:`` words of a mutant (each a substring of a test that must fail)."""
    try:
        return _kit.expected_words(path.read_text())
    except PatchError as exc:
        raise PatchError(f"{path.name}: {exc}") from None
