"""ex3 · MultiHeadAttention.forward against the reference, with the same loaded weights."""
from __future__ import annotations

import pytest
import torch

from autograder.suites.checks import (describe_inputs, expect_all_finite, expect_dtype, expect_shape,
                                      expect_tuple, fail)
from autograder.suites.ex3_multihead.common import (B, D_MODEL, HEADS, M, N, expect_forward,
                                                    inputs, padding_mask, perturbed_state,
                                                    random_mask, reference_state)

pytestmark = pytest.mark.covers("MultiHeadAttention")


@pytest.mark.points(1.5)
@pytest.mark.contract("MultiHeadAttention.forward/shapes", "MultiHeadAttention.forward/signature")
@pytest.mark.covers("MultiHeadAttention.forward:dtype/float32")
def test_shapes(mha):
    """forward returns (output (B, n, d_model), weights (B, h, n, m))"""
    q, k, v = inputs(5101)
    got = mha(q, k, v)
    output, weights = expect_tuple(got, 2, "MultiHeadAttention.forward (should return (output, weights))")
    shown = describe_inputs(query=q, key=k, value=v)
    expect_shape(output, (B, N, D_MODEL), "output", shown)
    expect_shape(weights, (B, HEADS, N, M), "weights", shown)
    expect_dtype(output, torch.float32, "output (float32 module and inputs)")
    expect_all_finite((output, weights), "MultiHeadAttention.forward(query, key, value)", shown)


@pytest.mark.points(2)
@pytest.mark.contract("MultiHeadAttention.forward/formula", "conventions/deterministic")
def test_self_attention_weights(mha, state):
    """self-attention: the per-head weights match the reference"""
    q, _, _ = inputs(5102, n=5, m=5)
    expect_forward(mha(q, q, q), state, q, q, q, None, "mha(x, x, x)", parts=("weights",))


@pytest.mark.points(2)
@pytest.mark.contract("MultiHeadAttention.forward/formula", "conventions/deterministic")
def test_self_attention_output(mha, state):
    """self-attention: the output matches the reference"""
    q, _, _ = inputs(5102, n=5, m=5)
    expect_forward(mha(q, q, q), state, q, q, q, None, "mha(x, x, x)", parts=("output",))


@pytest.mark.points(2.5)
@pytest.mark.contract("MultiHeadAttention.forward/formula", "MultiHeadAttention.forward/inputs")
def test_cross_attention(mha, state):
    """cross-attention (m keys ≠ n queries): weights and output match the reference"""
    q, k, v = inputs(5103)
    expect_forward(mha(q, k, v), state, q, k, v, None, "mha(query, key, value)")


@pytest.mark.points(1.5)
@pytest.mark.contract("MultiHeadAttention.forward/mask", "conventions/masks")
@pytest.mark.covers("MultiHeadAttention.forward:mask/(n, m)")
def test_mask_query_key(mha, state):
    """a boolean (n, m) mask, True = may attend, shared by all batches and heads"""
    q, k, v = inputs(5104)
    mask = random_mask((N, M), seed=5105)
    expect_forward(mha(q, k, v, mask), state, q, k, v, mask, "mha(query, key, value, mask (n, m))")


@pytest.mark.points(1.5)
@pytest.mark.contract("MultiHeadAttention.forward/mask", "conventions/masks")
@pytest.mark.covers("MultiHeadAttention.forward:mask/(B, 1, 1, m)")
def test_mask_padding(mha, state):
    """a (B, 1, 1, m) padding mask"""
    q, k, v = inputs(5106)
    mask = padding_mask([4, 2], M)
    expect_forward(mha(q, k, v, mask), state, q, k, v, mask,
                   "mha(query, key, value, mask (B, 1, 1, m))")


@pytest.mark.points(1.5)
@pytest.mark.contract("MultiHeadAttention.forward/mask", "conventions/masks")
@pytest.mark.covers("MultiHeadAttention.forward:mask/(B, 1, n, m)")
def test_mask_per_batch(mha, state):
    """a (B, 1, n, m) per-batch mask"""
    q, k, v = inputs(5107)
    mask = random_mask((B, 1, N, M), seed=5108)
    expect_forward(mha(q, k, v, mask), state, q, k, v, mask,
                   "mha(query, key, value, mask (B, 1, n, m))")


@pytest.mark.points(1)
@pytest.mark.contract("MultiHeadAttention.forward/mask", "conventions/masks")
@pytest.mark.covers("MultiHeadAttention.forward:mask/(h, n, m)")
def test_mask_per_head(mha, state):
    """an (h, n, m) per-head mask (broadcast over the batch)"""
    q, k, v = inputs(5114)
    mask = random_mask((HEADS, N, M), seed=5115)
    expect_forward(mha(q, k, v, mask), state, q, k, v, mask,
                   "mha(query, key, value, mask (h, n, m))")


@pytest.mark.points(2)
@pytest.mark.contract("conventions/dtype", "MultiHeadAttention.forward/formula")
@pytest.mark.covers("MultiHeadAttention.forward:dtype/float64")
def test_float64(student, support, state):
    """after .double(), float64 inputs give float64 results matching the reference closely"""
    model = student.multihead.MultiHeadAttention(D_MODEL, HEADS)
    support.modules.load_weights(model, state)
    model.double()
    q, k, v = inputs(5109, dtype=torch.float64)
    mask = padding_mask([6, 3], M)
    got = model(q, k, v, mask)
    output, weights = expect_tuple(got, 2, "MultiHeadAttention.forward (should return (output, weights))")
    expect_dtype(output, torch.float64, "output of a float64 module on float64 inputs")
    expect_dtype(weights, torch.float64, "weights of a float64 module on float64 inputs")
    expect_forward(got, state, q, k, v, mask, "float64 mha(query, key, value, mask (B, 1, 1, m))")


@pytest.mark.points(1.5)
@pytest.mark.contract("MultiHeadAttention.forward/formula", "MultiHeadAttention/structure")
@pytest.mark.covers("MultiHeadAttention.forward:args/bias=False")
def test_without_bias(student, support):
    """bias=False: forward matches the reference with the loaded weights"""
    state = reference_state(5110, bias=False, d_model=8, heads=2)
    model = student.multihead.MultiHeadAttention(8, 2, bias=False)
    support.modules.load_weights(model, state)
    q, k, v = inputs(5111, n=3, m=5, d_model=8)
    expect_forward(model(q, k, v), state, q, k, v, None,
                   "MultiHeadAttention(8, 2, bias=False)(query, key, value)", heads=2)


@pytest.mark.points(2)
@pytest.mark.contract("MultiHeadAttention.forward/formula")
def test_heads_independent(student, support, state):
    """changing one head's slice of W_q changes that head's weights only"""
    head = 1
    model = student.multihead.MultiHeadAttention(D_MODEL, HEADS)
    q, k, v = inputs(5112)
    support.modules.load_weights(model, state)
    before = expect_tuple(model(q, k, v), 2, "MultiHeadAttention.forward (should return (output, weights))")[1]
    support.modules.load_weights(model, perturbed_state(state, head, seed=5113))
    after = expect_tuple(model(q, k, v), 2, "MultiHeadAttention.forward (should return (output, weights))")[1]
    shown = describe_inputs(query=q, key=k, value=v)
    expect_shape(before, (B, HEADS, N, M), "weights", shown)
    expect_shape(after, (B, HEADS, N, M), "weights", shown)
    expect_all_finite((before, after), "weights", shown)
    diff = (after.detach().double() - before.detach().double()).abs().amax(dim=(0, 2, 3))   # per head
    others = [i for i in range(HEADS) if i != head and not float(diff[i]) <= 1e-5]
    if others:
        fail(f"changing only the rows of W_q.weight that produce head {head}'s queries (output "
             f"features {head * 4}…{head * 4 + 3}) also changed the weights of head(s) "
             f"{', '.join(str(i) for i in others)}: each head must use only its own d_head "
             "features (split_heads: reshape to (B, n, h, d_head), then transpose(1, 2))")
    if not float(diff[head]) >= 1e-4:
        fail(f"changing the rows of W_q.weight that produce head {head}'s queries did not change "
             f"head {head}'s weights: head i must use features i·d_head … (i+1)·d_head − 1 of "
             "W_q(query)")
