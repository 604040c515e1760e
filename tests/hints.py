"""The hint measure's rules, shared by ``bench/hint_measure.py`` and the kit's tests.

Every bug of a corpus has a label: the causes (``autograder.diagnosis.causes.Cause`` ids) any
of which is a right "Likely cause" for it, or none ("none of these: why"). Over the failing
tests of its own exercise, a bug's hints are

* ``WRONG`` when some test names a diagnosis (one cause, or several the test cannot tell
  apart) none of whose causes is in the label: it sends the student the wrong way;
* ``RIGHT`` when none is wrong and some test names a cause of the label;
* ``NONE`` when no test names a cause (``KEPT`` when no test failed at all).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Iterable, Sequence

from mutants import label as mutant_label

TESTS = Path(__file__).resolve().parent
STUDENT_LABELS = TESTS / "student_corpus" / "labels.toml"
HELD_LABELS = TESTS / "held_out_corpus" / "labels.toml"


class Verdict(Enum):
    RIGHT = "right"
    NONE = "none"
    WRONG = "wrong"
    KEPT = "kept full marks"


@dataclass(frozen=True)
class Label:
    """The causes any of which is right for a bug (empty: none fits, ``why`` says so)."""
    causes: frozenset[str]
    why: str = ""


def folder_labels(path: Path) -> dict[str, Label]:
    """``{case folder name: Label}`` from a corpus's labels.toml."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {name: Label(frozenset(entry.get("cause", ())), entry.get("none", ""))
            for name, entry in data.items()}


def mutant_labels(paths: Iterable[Path]) -> dict[Path, Label]:
    out = {}
    for path in paths:
        ids = mutant_label(path)
        if ids is None:
            raise ValueError(f"{path.name}: no '# cause-id:' header line")
        out[path] = Label(frozenset(ids))
    return out


def verdict(label: Label, diagnoses: Sequence[Sequence[str]], failed: bool = True) -> Verdict:
    """The verdict on a bug whose failing tests named ``diagnoses`` (each the ids one test
    named: one cause, or several it cannot tell apart; empty for a test naming none)."""
    if not failed:
        return Verdict.KEPT
    named = [set(d) for d in diagnoses if d]
    if any(not (d & label.causes) for d in named):
        return Verdict.WRONG
    return Verdict.RIGHT if named else Verdict.NONE


def wrong_ones(label: Label, diagnoses: Sequence[Sequence[str]]) -> list[list[str]]:
    """The diagnoses that name none of the label's causes."""
    return [list(d) for d in diagnoses if d and not (set(d) & label.causes)]
