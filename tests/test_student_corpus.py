"""The blind student corpus: submissions written by someone who read only
the student release (``dist/release.zip``), never the kit, kept as written (never tuned
after the fact: a bug the suites miss is a missing test, not a case to edit).

    tests/student_corpus/correct/<style>/   five complete, correct files in one honest style
    tests/student_corpus/bugs/<case>/       the five files with ONE bug, and BUG.txt:
                                            "<exercise> <function> : <what is wrong>"

Correct styles keep full marks on every exercise; every bug loses points on a test of its
exercise that is about the function holding it; no bug gets a wrong likely cause (its label:
labels.toml, tests/hints.py) and at least RIGHT_SHARE get the right one (the corpus and its
verdicts: ``student_corpus_cases.py``; each submission graded once per run: ``gradings.py``).
``bench/grade_corpus.py`` prints the same table for notes.

A few bugs break only a rule the students' docstrings state and the published contract does
not make (``BEYOND_CONTRACT``): every point traces to a sentence of the contract, so these keep
full marks, and a 0-point note about their function fails (the feedback still reaches the
student).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from hints import Verdict, folder_labels, verdict
from student_corpus_cases import BEYOND_CONTRACT, CORPUS, bug_of, exercises_of, folders, problem_of, wrong_hint

LABELS = CORPUS / "labels.toml"    # the cause each bug should get (tests/hints.py)
RIGHT_SHARE = 0.90                 # nine bugs in ten get the right likely cause, none a wrong one


@pytest.mark.parametrize("folder", folders("correct"), ids=lambda p: p.name)
def test_correct_style_keeps_full_marks(folder: Path, gradings):
    problem = problem_of(folder, gradings.grade_folder(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", [f for f in folders("bugs") if f.name not in BEYOND_CONTRACT],
                         ids=lambda p: p.name)
def test_bug_loses_points_on_its_function(folder: Path, gradings):
    problem = problem_of(folder, gradings.grade_folder(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", [f for f in folders("bugs") if f.name in BEYOND_CONTRACT],
                         ids=lambda p: p.name)
def test_a_rule_beyond_the_contract_costs_nothing_and_gets_a_note(folder: Path, gradings):
    problem = problem_of(folder, gradings.grade_folder(folder, exercises_of(folder)))
    assert not problem, problem


def test_the_bugs_beyond_the_contract_are_in_the_corpus():
    assert set(BEYOND_CONTRACT) <= {f.name for f in folders("bugs")}


@pytest.mark.parametrize("folder", folders("bugs"), ids=lambda p: p.name)
def test_bug_gets_no_wrong_hint(folder: Path, gradings):
    """A hint is right or absent: every likely cause a failing test names includes a cause of
    the bug's label (labels.toml, decided from BUG.txt)."""
    problem = wrong_hint(folder, gradings.grade_folder(folder, exercises_of(folder)))
    assert not problem, problem


def test_most_bugs_get_the_right_hint(gradings):
    bugs = folders("bugs")
    labels = folder_labels(LABELS)
    verdicts = {f.name: verdict(labels[f.name], [list(t.cause) for t in gradings.grade_folder(f, exercises_of(f)).tests
                                                 if not t.passed]) for f in bugs}
    others = {n: v.value for n, v in verdicts.items() if v is not Verdict.RIGHT}
    share = 1 - len(others) / len(bugs)
    assert share >= RIGHT_SHARE, f"right likely cause for {share:.0%} of {len(bugs)} bugs; others: {others}"
