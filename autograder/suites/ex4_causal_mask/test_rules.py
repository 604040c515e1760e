"""ex4 · the exercise's rules: no banned APIs."""
from __future__ import annotations

import pytest

from autograder.suites import checks
from autograder.suites.ex4_causal_mask import common


@pytest.mark.covers("rules", "causal_self_attention")
@pytest.mark.points(1)
def test_no_banned_apis(student, submission):
    """causal attention is written by hand: no banned APIs (and causal_self_attention runs)"""
    found = submission.found["ex4"]
    if found.source is None:
        checks.fail(found.problem or "causal.py could not be read")
    # the points are for a working hand-written causal attention, not for an empty file
    x = common.randn(90, 1, 2, 2)
    W = common.weights(90, 2, 2, 2)
    checks.expect_all_finite(student.causal.causal_self_attention(x, *W), "causal_self_attention(x, W_q, W_k, W_v)",
                             checks.describe_inputs(x=x))
    if found.banned:
        lines = "\n".join(f"  {hit}" for hit in found.banned[:20])
        checks.fail("causal.py uses APIs this exercise does not allow (write the attention and the "
                    "masks yourself):\n" + lines,
                    cause='a library helper (nn.Transformer.generate_square_subsequent_mask, F.scaled_dot_product_attention, …) where the exercise asks for your own masks and attention')
