"""ex3 · the shape rules at their smallest sizes: one head, one query, one key.

Students' crashes live there (a ``squeeze()`` that drops the head axis or a length-1
sequence, a reshape that assumes ``h > 1``)."""
from __future__ import annotations

import pytest
import torch

import reference.multihead as ref
from autograder import seeds
from autograder.suites.checks import describe_inputs, expect_close, expect_shape
from autograder.suites.ex3_multihead.common import expect_forward, inputs, reference_state

FORWARD = "MultiHeadAttention.forward"


@pytest.mark.points(0.5)
@pytest.mark.contract("split_heads/features", "combine_heads/inverse")
@pytest.mark.covers("split_heads", "combine_heads", "split_heads:size/one head", "combine_heads:size/one head")
def test_split_and_combine_one_head(student):
    """split_heads(x, 1) is (B, 1, n, d_model) and combine_heads gives x back"""
    x = torch.randn(2, 3, 8, generator=seeds.generator(60), dtype=torch.float64)
    what = "split_heads(x, num_heads=1)"
    got = student.multihead.split_heads(x, 1)
    expect_shape(got, (2, 1, 3, 8), what, describe_inputs(x=x))
    expect_close(got, ref.split_heads(x, 1), what, inputs=describe_inputs(x=x), rtol=1e-12, atol=1e-12)
    back = student.multihead.combine_heads(ref.split_heads(x, 1))
    expect_shape(back, (2, 3, 8), "combine_heads(x with one head)", describe_inputs(x=x))
    expect_close(back, x, "combine_heads(x with one head)", inputs=describe_inputs(x=x), rtol=1e-12, atol=1e-12)


@pytest.mark.points(0.5)
@pytest.mark.contract("MultiHeadAttention.forward/formula", "MultiHeadAttention.forward/shapes")
@pytest.mark.covers("MultiHeadAttention", f"{FORWARD}:size/one head")
def test_forward_one_head(student, support):
    """MultiHeadAttention(d_model, 1): one head, weights (B, 1, n, m)"""
    state = reference_state(61, d_model=8, heads=1)
    model = student.multihead.MultiHeadAttention(8, 1)
    support.modules.load_weights(model, state)
    q, k, v = inputs(62, n=3, m=5, d_model=8)
    expect_forward(model(q, k, v), state, q, k, v, None, "MultiHeadAttention(8, 1)(query, key, value)", heads=1)


@pytest.mark.points(0.5)
@pytest.mark.contract("MultiHeadAttention.forward/formula", "MultiHeadAttention.forward/inputs")
@pytest.mark.covers("MultiHeadAttention", f"{FORWARD}:size/one query", f"{FORWARD}:size/one key")
def test_forward_one_query_and_one_key(mha, state):
    """forward with one query (n = 1) and with one key (m = 1)"""
    q, k, v = inputs(63, n=1, m=6)
    expect_forward(mha(q, k, v), state, q, k, v, None, "mha(query with n = 1, key, value)")
    q, k, v = inputs(64, n=4, m=1)
    expect_forward(mha(q, k, v), state, q, k, v, None, "mha(query, key and value with m = 1)")
