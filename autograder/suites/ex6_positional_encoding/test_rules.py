"""ex6 · the exercise's rules: no banned APIs."""
from __future__ import annotations

import pytest

from autograder.suites import checks


@pytest.mark.covers("rules", "sinusoidal_encoding")
@pytest.mark.points(0.5)
@pytest.mark.contract("banned")
@pytest.mark.covers("sinusoidal_encoding:banned", "LearnedPositionalEmbedding.__init__:banned", "LearnedPositionalEmbedding.forward:banned", "add_positional_encoding:banned", "make_copy_task:banned", "extrapolation_experiment:banned", "plot_encoding:banned")
def test_no_banned_apis(student, submission):
    """positional.py: no built-in attention (and sinusoidal_encoding runs)"""
    found = submission.found["ex6"]
    if found.source is None:
        checks.fail(found.problem or "positional.py could not be read")
    checks.expect_all_finite(student.positional.sinusoidal_encoding(2, 2),      # the points are for working code
                             "sinusoidal_encoding(2, 2)")
    if found.banned:
        lines = "\n".join(f"  {hit}" for hit in found.banned[:20])
        checks.fail("positional.py uses APIs this exercise does not allow:\n" + lines,
                    cause="a built-in attention (nn.MultiheadAttention, F.scaled_dot_product_attention)")
