"""Correct code holds for any seed secret (the affordable part of ``bench/seed_sweep.py``).

Hidden inputs change with the build's secret and the submission (``autograder/seeds.py``), so
a suite must never rely on the inputs of one secret: the solution and every alternative
style keep full marks under 3 more secrets besides the checkout's (the corpus tests', fresh in
every clean clone), and every mutant fails its named tests under one more (only those tests
are run for it). The full sweep, 30 secrets over the whole corpus, every test of every case:
``.venv/bin/python bench/seed_sweep.py --jobs 2``. Each
(case, secret) is graded once per run (``gradings.py``); the cases are spread over the test
processes one by one.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from mutants import expected_failures  # noqa: E402
from seed_sweep import corpus, grade_case, sweep_secret  # noqa: E402

CORRECT_SECRETS = [sweep_secret(i) for i in range(100, 103)]
MUTANT_SECRET = sweep_secret(200)


def params(kinds: tuple[str, ...]) -> list:
    return [pytest.param(case, id=case.label.replace("/", "-")) for case in corpus(kinds=kinds)]


@pytest.mark.parametrize("case", params(("solution", "alternative")))
@pytest.mark.parametrize("secret", CORRECT_SECRETS, ids=lambda s: s[:8])
def test_correct_code_keeps_full_marks_under_any_secret(case, secret, gradings):
    row = grade_case(case, secret, gradings.grade)
    assert row["ok"], (row["secret"][:16], row["problem"][:600])


@pytest.mark.parametrize("case", params(("mutant",)))
def test_mutant_is_caught_under_another_secret(case, gradings):
    """Only the tests it must fail are run (each test's hidden inputs come from its own id, so
    they are those of a full grading): the full grading of every mutant, with every test it
    fails and passes, is test_suites_corpus.py's, under the checkout's secret."""
    only = tuple(expected_failures(case.path))
    row = grade_case(case, MUTANT_SECRET,
                     lambda files, exercises, secret: gradings.grade(files, exercises, secret, only))
    assert row["ok"], (row["secret"][:16], row["problem"][:600])
