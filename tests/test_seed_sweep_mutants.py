"""Every mutant fails its named tests under another secret than the checkout's (with
``tests/test_suites_corpus.py``, which grades them under the checkout's: two secrets per CI
run, and a fresh checkout secret in every clean clone). See ``tests/test_seed_sweep.py``."""
from __future__ import annotations

import pytest

from test_seed_sweep import grade_case, params, sweep_secret

MUTANT_SECRET = sweep_secret(200)


@pytest.mark.parametrize("case", params(("mutant",)))
def test_mutant_is_caught_under_another_secret(case):
    row = grade_case(case, MUTANT_SECRET)
    assert row["ok"], (row["secret"][:16], row["problem"][:600])
