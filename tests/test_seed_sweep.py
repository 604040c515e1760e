"""Correct code holds for any seed secret (the affordable part of ``bench/seed_sweep.py``).

Hidden inputs change with the build's secret and the submission (``autograder/seeds.py``), so
a suite must never rely on the inputs of one secret: the solution and every alternative
style keep full marks under 3 more secrets besides the checkout's (the corpus tests', fresh in
every clean clone). Mutants: ``tests/test_seed_sweep_mutants.py`` (a file of its own, so the
two halves run on different test workers). The full sweep, 30 secrets over the whole corpus:
``.venv/bin/python bench/seed_sweep.py --jobs 2``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from seed_sweep import corpus, grade_case, sweep_secret  # noqa: E402

CORRECT_SECRETS = [sweep_secret(i) for i in range(100, 103)]


def params(kinds: tuple[str, ...]) -> list:
    return [pytest.param(case, id=case.label.replace("/", "-")) for case in corpus(kinds=kinds)]


@pytest.mark.parametrize("case", params(("solution", "alternative")))
def test_correct_code_keeps_full_marks_under_any_secret(case):
    broken = [row for row in (grade_case(case, s) for s in CORRECT_SECRETS) if not row["ok"]]
    assert not broken, [(r["secret"][:16], r["problem"][:600]) for r in broken]
