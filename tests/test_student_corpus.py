"""The blind student corpus: submissions written by someone who read only
the student release (``dist/release.zip``), never the kit, kept as written (never tuned
after the fact: a bug the suites miss is a missing test, not a case to edit).

    tests/student_corpus/correct/<style>/   five complete, correct files in one honest style
    tests/student_corpus/bugs/<case>/       the five files with ONE bug, and BUG.txt:
                                            "<exercise> <function> : <what is wrong>"

Correct styles keep full marks on every exercise; every bug loses points on a test of its
exercise that is about the function holding it; at least NAMED_SHARE of the bugs get a
named likely mistake (the corpus and its verdicts: ``student_corpus_cases.py``; each
submission graded once per run: ``gradings.py``). ``bench/grade_corpus.py`` prints the same
table for notes.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from student_corpus_cases import NAMED, NAMED_SHARE, bug_of, exercises_of, folders, problem_of


@pytest.mark.parametrize("folder", folders("correct"), ids=lambda p: p.name)
def test_correct_style_keeps_full_marks(folder: Path, gradings):
    problem = problem_of(folder, gradings.grade_folder(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", folders("bugs"), ids=lambda p: p.name)
def test_bug_loses_points_on_its_function(folder: Path, gradings):
    problem = problem_of(folder, gradings.grade_folder(folder, exercises_of(folder)))
    assert not problem, problem


def test_most_bugs_get_a_named_mistake(gradings):
    bugs = folders("bugs")
    unnamed = [f.name for f in bugs
               if not any(NAMED in t.output for t in gradings.grade_folder(f, bug_of(f)[0]).tests if not t.passed)]
    share = 1 - len(unnamed) / len(bugs)
    assert share >= NAMED_SHARE, f"named mistakes for {share:.0%} of {len(bugs)} bugs; unnamed: {unnamed}"
