"""ex6 · the shape rules at their smallest sizes: a table of one position, one position to add.

Students' crashes live there (a ``squeeze()`` that drops the position axis, ``pe[:n]`` taken
from a table built for ``n > 1``). A width of one column has a test of its own
(test_sinusoidal.py, ``12x1``)."""
from __future__ import annotations

import pytest
import torch

import reference.positional as ref
from autograder.suites import checks
from autograder.suites.ex6_positional_encoding import common


@pytest.mark.points(0.5)
@pytest.mark.contract("sinusoidal_encoding/formula", "sinusoidal_encoding/table")
@pytest.mark.covers("sinusoidal_encoding", "sinusoidal_encoding:size/max_len = 1")
def test_table_of_one_position(student):
    """sinusoidal_encoding(1, d_model): one row, position 0"""
    common.expect_table(student.positional.sinusoidal_encoding(1, 6), 1, 6, torch.float32,
                        "sinusoidal_encoding(1, 6)")


@pytest.mark.points(0.5)
@pytest.mark.contract("LearnedPositionalEmbedding/forward", "add_positional_encoding/sum")
@pytest.mark.covers("LearnedPositionalEmbedding", "add_positional_encoding",
                    "LearnedPositionalEmbedding.forward:size/one position", "add_positional_encoding:size/one position")
def test_one_position(student, support):
    """LearnedPositionalEmbedding.forward and add_positional_encoding on x with one position (n = 1)"""
    module, table = common.learned_module(student, support, 30, 5, 4)
    x = common.randn(31, 2, 1, 4)
    inputs = checks.describe_inputs(x=x) + ", max_len=5"
    with checks.calling("LearnedPositionalEmbedding.forward"):
        out = module(x)
    common.expect_tensor(out, "forward(x)")
    checks.expect_shape(out, (2, 1, 4), "forward(x)", inputs)
    checks.expect_close(out, x.double() + table.double()[:1], "forward(x)", inputs=inputs,
                        rtol=1e-5, atol=1e-6)
    pe = ref.sinusoidal_encoding(3, 4)
    got = common.expect_tensor(student.positional.add_positional_encoding(x, pe), "add_positional_encoding(x, pe)")
    inputs = checks.describe_inputs(x=x, pe=pe)
    checks.expect_shape(got, (2, 1, 4), "add_positional_encoding(x, pe)", inputs)
    checks.expect_close(got, (x + pe[:1]).double(), "add_positional_encoding(x, pe)", inputs=inputs,
                        rtol=1e-5, atol=1e-6)
