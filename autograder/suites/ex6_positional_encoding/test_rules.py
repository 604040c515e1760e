"""ex6 · the exercise's rules: no banned APIs."""
from __future__ import annotations

import pytest
import torch

from autograder.diagnosis.causes import General
from autograder.suites import checks
from autograder.suites.ex6_positional_encoding import common


@pytest.mark.covers("rules", "sinusoidal_encoding")
@pytest.mark.points(0.5)
@pytest.mark.contract("banned")
@pytest.mark.covers("sinusoidal_encoding:banned", "LearnedPositionalEmbedding.__init__:banned", "LearnedPositionalEmbedding.forward:banned", "add_positional_encoding:banned", "make_copy_task:banned", "extrapolation_experiment:banned", "plot_encoding:banned")
def test_no_banned_apis(student, submission):
    """positional.py: no built-in attention (and sinusoidal_encoding runs)"""
    found = submission.found["ex6"]
    if found.source is None:
        checks.fail(found.problem or "positional.py could not be read")
    common.expect_table(student.positional.sinusoidal_encoding(4, 2), 4, 2, torch.float32,   # the points are
                        "sinusoidal_encoding(4, 2)")                                       # for working code
    if found.banned:
        lines = "\n".join(f"  {hit}" for hit in found.banned[:20])
        checks.fail("positional.py uses APIs this exercise does not allow:\n" + lines,
                    cause=General.BANNED_API)
