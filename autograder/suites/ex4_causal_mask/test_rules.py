"""ex4 · the exercise's rules: no banned APIs."""
from __future__ import annotations

import pytest

from autograder.suites import checks
from autograder.suites.ex4_causal_mask import common


@pytest.mark.covers("rules", "causal_self_attention")
@pytest.mark.points(1)
@pytest.mark.contract("banned")
@pytest.mark.covers("create_causal_mask:banned", "create_padding_mask:banned", "combine_masks:banned", "causal_self_attention:banned", "attend_next:banned", "greedy_generate:banned")
def test_no_banned_apis(student, submission):
    """causal attention is written by hand: no banned APIs (and causal_self_attention runs)"""
    x = common.randn(90, 1, 2, 2)
    W = common.weights(90, 2, 2, 2)
    checks.expect_all_finite(student.causal.causal_self_attention(x, *W), "causal_self_attention(x, W_q, W_k, W_v)",
                             checks.describe_inputs(x=x))
    checks.expect_no_banned_apis(
        submission, "ex4", lambda: student.causal.causal_self_attention(x, *W),
        rules="write the attention and the masks yourself")
