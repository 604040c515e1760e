"""Correct sets written by people who never saw the kit keep full marks on every exercise.

    tests/contract_corpus/contract_a/, contract_b/      written from EXERCISES.md alone
    tests/contract_corpus/nanogpt/, annotated/,         written in the idioms of nanoGPT, the
                          tutorial/, cs231n/            Annotated Transformer, the PyTorch
                                                        tutorials and CS231n
    (README.canonical.md, FREEDOMS.contract_a.md: the freedoms each one took)

Every point a student can lose traces to a sentence of the published contract: a set written
from it, or in the field's usual way within it, must lose none, whatever freedom it took
(``-inf`` or ``-1e9``, ``imshow`` or ``pcolormesh``, the prompt itself for no new token, a
``path_length`` that does not check its kind). A 0-point note may fail (it is feedback, not a
deduction). ``bench/seed_sweep.py --kinds contract`` grades them under many secrets.
"""
from __future__ import annotations

import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from autograder import contract
from kit import grade_folder

CORPUS = Path(__file__).resolve().parent / "contract_corpus"
EVERY = ",".join(ex.id for ex in contract.EXERCISES)


def sets() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


def grade_copy(folder: Path, exercises: str = EVERY):
    """Grade a copy of a set (the corpus stays as written) under the current seed secret
    (``bench/seed_sweep.py`` sets others)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "submission"
        shutil.copytree(folder, copy)
        return grade_folder(copy, exercises)


_graded = lru_cache(maxsize=None)(grade_copy)


def problem_of(folder: Path, results) -> str:
    """"" when a set kept full marks on every exercise; else what it lost, test by test
    (also used by ``bench/seed_sweep.py --kinds contract``)."""
    lost = [(t.name, t.output[:300]) for t in results.tests if t.score < t.max_score]
    total = sum(ex.points for ex in contract.EXERCISES)
    if not lost and results.score == results.max_score == total:
        return ""
    return f"{folder.name}, a correct set, scored {results.score:g} / {results.max_score:g}: {lost}"


def test_the_corpus_holds_every_exercise_in_every_set():
    assert len(sets()) >= 6, sets()
    for folder in sets():
        missing = [ex.filename for ex in contract.EXERCISES if not (folder / ex.filename).is_file()]
        assert not missing, (folder.name, missing)


@pytest.mark.parametrize("folder", sets(), ids=lambda p: p.name)
def test_a_set_written_from_the_contract_keeps_full_marks(folder: Path):
    problem = problem_of(folder, _graded(folder))
    assert not problem, problem
