"""The held-out corpus: one-bug submissions written from the student release alone by someone
who never saw the kit, kept to MEASURE how the kit's hints generalise (``bench/hint_measure.py
--corpus held``), never to tune them: no test here asserts anything about its hints (that would
be tuning to it). What is asserted is the grading itself:

    tests/held_out_corpus/correct/<set>/   a complete, correct set of the six files: full marks
    tests/held_out_corpus/bugs/<case>/     the six files with ONE bug, BUG.txt "<exercise> <function> : …"
                                           (with its effect and the mistake): loses points on its exercise
"""
from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "held_out_corpus"
ALL = "ex1,ex2,ex3,ex4,ex5,ex6"

# Bugs whose BUG.txt describes a departure from the stub that no hidden test can judge yet,
# each with why; such a bug must keep failing here (strict xfail) until a test catches it.
NOT_CAUGHT: dict[str, str] = {}
# Bugs in behaviour the contract (EXERCISES.md) does not ask for: their checks are notes worth
# 0 points (docs/COVERAGE.md), so these keep full marks; nothing is asserted about their points.
NOT_IN_CONTRACT = {
    "ex4_greedy_dtype_promoted": "greedy_generate's int32 prompts: the contract says LongTensor",
    "ex4_greedy_zero_returns_prompt": "a copy for max_new_tokens = 0: not in the contract",
    "ex4_greedy_without_no_grad": "generation without gradients: the contract asks it of accuracy only",
    "ex5_path_length_no_valueerror": "path_length's ValueError: not in the contract",
}


def _folders(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).iterdir() if p.is_dir())


def _exercise(folder: Path) -> str:
    return (folder / "BUG.txt").read_text(encoding="utf-8").split()[0]


@pytest.mark.parametrize("folder", _folders("correct"), ids=lambda p: p.name)
def test_correct_set_keeps_full_marks(folder: Path, gradings):
    results = gradings.grade_folder(folder, ALL)
    lost = {t.name: t.output[:300] for t in results.tests if not t.passed}
    assert not lost and results.score == pytest.approx(results.max_score), lost


def _bug_cases() -> list:
    cases = []
    for folder in _folders("bugs"):
        if folder.name in NOT_IN_CONTRACT:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=NOT_CAUGHT[folder.name])] if folder.name in NOT_CAUGHT else []
        cases.append(pytest.param(folder, id=folder.name, marks=marks))
    return cases


@pytest.mark.parametrize("folder", _bug_cases())
def test_bug_loses_points_on_its_exercise(folder: Path, gradings):
    exercise = _exercise(folder)
    results = gradings.grade_folder(folder, exercise)
    failed = [t.name for t in results.tests if not t.passed]
    assert failed and all(name.startswith(f"{exercise} ") for name in failed), (folder.name, failed)
    assert results.score < results.max_score
