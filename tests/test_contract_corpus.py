"""Correct sets written by people who never saw the kit keep full marks on every exercise.

    (the sets and their verdict: tests/contract_corpus_cases.py)

Every point a student can lose traces to a sentence of the published contract: a set written
from it, or in the field's usual way within it, must lose none, whatever freedom it took
(``-inf`` or ``-1e9``, ``imshow`` or ``pcolormesh``, the prompt itself for no new token, a
``path_length`` that does not check its kind). A 0-point note may fail (it is feedback, not a
deduction). ``bench/seed_sweep.py --kinds contract`` grades them under many secrets.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from contract_corpus_cases import EVERY, problem_of, sets


def test_the_corpus_holds_every_exercise_in_every_set():
    assert len(sets()) >= 6, sets()
    for folder in sets():
        missing = [ex.filename for ex in contract.EXERCISES if not (folder / ex.filename).is_file()]
        assert not missing, (folder.name, missing)


@pytest.mark.parametrize("folder", sets(), ids=lambda p: p.name)
def test_a_set_written_from_the_contract_keeps_full_marks(folder: Path, gradings):
    results = gradings.grade_folder(folder, EVERY)
    total = sum(ex.points for ex in contract.EXERCISES)
    assert results.max_score == total, (results.max_score, total)
    problem = problem_of(folder, results)
    assert not problem, problem
