"""ex6 judges values before properties: a ``positional.py`` that computes nothing (a zero or
constant table, ``x * 1.0``, ``x * 0.0``, the input handed back, a constant dict for the
experiment) scores at most 1.5 of ex6's 20 points. Before, the first of these scored 7.3: the
relative-position, bounds, dtype, device, inputs-unchanged and experiment tests judged a property
of whatever came back.

Corpus: ``tests/submissions/ex6/hollow/*.py`` (each made from the release stub; its first lines
say what it does). The solution, alternatives and mutants keep their verdicts in
tests/test_suites_corpus.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from helpers import SUBMISSIONS, grade_folder, make_submission

HOLLOW = sorted((SUBMISSIONS / "ex6" / "hollow").glob("*.py"))
MOST = 1.5


@pytest.mark.parametrize("path", HOLLOW, ids=lambda p: p.stem)
def test_a_positional_file_that_computes_nothing_scores_almost_nothing(path: Path, tmp_path: Path):
    ex = contract.BY_ID["ex6"]
    results = grade_folder(make_submission(tmp_path, {ex.filename: path}), "ex6")
    score, total = results.by_exercise()["ex6"]
    passed = [t.name for t in results.tests if t.passed]
    assert total == ex.points
    assert score <= MOST, f"{path.stem}: {score:g}/{total:g}, passed: {passed}"


def test_the_hollow_corpus_has_cases():
    assert len(HOLLOW) >= 3
