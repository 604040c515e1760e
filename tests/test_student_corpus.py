"""The blind student corpus (issue 21 item 4): submissions written by someone who read only
the student release (``dist/release.zip``), never the kit, kept as written (never tuned
after the fact: a bug the suites miss is a missing test, not a case to edit).

    tests/student_corpus/correct/<style>/   five complete, correct files in one honest style
    tests/student_corpus/bugs/<case>/       the five files with ONE bug, and BUG.txt:
                                            "<exercise> <function> : <what is wrong>"

Correct styles keep full marks on every exercise; every bug loses points on a test of its
exercise that is about the function holding it; no bug gets a wrong likely cause (its label:
labels.toml) and at least RIGHT_SHARE get the right one. ``bench/grade_corpus.py`` prints the same table for notes.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from hints import Verdict, folder_labels, verdict, wrong_ones
from kit import grade_folder
from suite_covers import covers_by_result_name

CORPUS = Path(__file__).resolve().parent / "student_corpus"
LABELS = CORPUS / "labels.toml"    # the cause each bug should get (tests/hints.py)
RIGHT_SHARE = 0.90                 # nine bugs in ten get the right likely cause, none a wrong one
DEFAULT = "ex1,ex2,ex3,ex4,ex5"


def _folders(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).iterdir() if p.is_dir())


def bug_of(folder: Path) -> tuple[str, str, str]:
    """(exercise, function, description) from BUG.txt."""
    line = (folder / "BUG.txt").read_text(encoding="utf-8").strip()
    head, _, description = line.partition(" : ")
    exercise, function = head.split(maxsplit=1)
    return exercise, function.strip(), description.strip()


def grade_copy(folder: Path, exercises: str):
    """Grade a copy of a corpus submission (the corpus stays as written) under the current
    seed secret (``bench/seed_sweep.py`` sets another one)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "submission"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("BUG.txt"))
        return grade_folder(copy, exercises)


_graded = lru_cache(maxsize=None)(grade_copy)       # the tests below share one grading each


def exercises_of(folder: Path) -> str:
    """The exercises a corpus submission is graded on: all five for a correct style, the
    bug's own for a bug."""
    return DEFAULT if folder.parent.name == "correct" else bug_of(folder)[0]


def _names(function: str) -> set[str]:
    """``MultiHeadAttention.forward`` -> {"MultiHeadAttention.forward", "MultiHeadAttention", "forward"}."""
    parts = function.split(".")
    return {function, *parts}


def problem_of(folder: Path, results) -> str:
    """What is wrong with how a corpus submission was graded; "" when its verdict holds
    (also used by ``bench/seed_sweep.py --kinds student``)."""
    failed = [t for t in results.tests if not t.passed]
    if folder.parent.name == "correct":
        if results.score == results.max_score == 100:
            return ""
        return f"{folder.name}, a correct style, lost points: {[(t.name, t.output[:300]) for t in failed]}"
    exercise, function, description = bug_of(folder)
    if not failed:
        return f"{folder.name} ({description}) kept full marks: a missing hidden test"
    covers = covers_by_result_name()
    names = _names(function)
    about = [t.name for t in failed
             if names & {c.split(":")[0] for c in covers.get(t.name, set())}
             or any(re.search(rf"\b{re.escape(n)}\b", t.name) for n in names)]
    if not about:
        return f"{folder.name}: the bug is in {function} but no failing test is about it: {[t.name for t in failed]}"
    return ""


@pytest.mark.parametrize("folder", _folders("correct"), ids=lambda p: p.name)
def test_correct_style_keeps_full_marks(folder: Path):
    problem = problem_of(folder, _graded(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", _folders("bugs"), ids=lambda p: p.name)
def test_bug_loses_points_on_its_function(folder: Path):
    problem = problem_of(folder, _graded(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", _folders("bugs"), ids=lambda p: p.name)
def test_bug_gets_no_wrong_hint(folder: Path):
    """A hint is right or absent: every likely cause a failing test names includes a cause of
    the bug's label (labels.toml, decided from BUG.txt)."""
    label = folder_labels(LABELS)[folder.name]
    named = [list(t.cause) for t in _graded(folder, bug_of(folder)[0]).tests if not t.passed]
    wrong = wrong_ones(label, named)
    assert not wrong, f"{folder.name}: label {sorted(label.causes) or label.why}, but tests named {wrong}"


def test_most_bugs_get_the_right_hint():
    folders = _folders("bugs")
    labels = folder_labels(LABELS)
    verdicts = {f.name: verdict(labels[f.name], [list(t.cause) for t in _graded(f, bug_of(f)[0]).tests
                                                 if not t.passed]) for f in folders}
    others = {n: v.value for n, v in verdicts.items() if v is not Verdict.RIGHT}
    share = 1 - len(others) / len(folders)
    assert share >= RIGHT_SHARE, f"right likely cause for {share:.0%} of {len(folders)} bugs; others: {others}"
