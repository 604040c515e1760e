"""ex1 · the contract's general rules: inputs of every kind left alone, the device kept (meta
tensors), every broadcastable mask shape (the exercise's rows in exercise.py list what each test covers)."""
from __future__ import annotations

import pytest
import torch

import reference.attention as ref
from autograder.diagnosis import ex1 as mistakes
from autograder.suites import checks
from autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta, kind_id
from autograder.suites.ex1_attention import common

TORCH = "scaled_dot_product_attention"
NP = "scaled_dot_product_attention_np"
BACK = "attention_backward_np"


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", [
    pytest.param(k, id=kind_id(k), marks=pytest.mark.covers(TORCH, f"{TORCH}:inputs/{k}"))
    for k in ("shared", "grad")])
@pytest.mark.contract("conventions/inputs")
def test_torch_inputs_unchanged_every_kind(student, support, kind):
    """torch attention leaves Q, K, V and the mask unchanged, whatever kind of tensor they are"""
    Q, K, V = common.qkv(60, (2,), n=3, m=4, d_k=2, d_v=3)
    mask = common.mask(60, (3, 4))
    expect_inputs_unchanged(support, getattr(student.attention, TORCH), f"attention.{TORCH}",
                            [Q, K, V, mask], ["Q", "K", "V", "mask"], kind)


@pytest.mark.covers(TORCH, f"{TORCH}:device")
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/device")
def test_torch_keeps_device(student, support):
    """torch attention keeps the device: on meta tensors it returns meta tensors of the input's dtype"""
    Q, K, V = common.to_torch(*common.qkv(61, (2,), n=3, m=5, d_k=4, d_v=2), dtype=torch.float32)
    mask = torch.from_numpy(common.mask(61, (3, 5)))
    expect_on_meta(support, getattr(student.attention, TORCH), f"attention.{TORCH}", [Q, K, V, mask],
                   outputs=["output", "weights"], dtype="float32", shapes=[(2, 3, 2), (2, 3, 5)])


def _expect_np(student, Q, K, V, mask):
    inputs = checks.describe_inputs(Q=Q, K=K, V=V, mask=mask)
    out, w = checks.expect_tuple(getattr(student.attention, NP)(Q, K, V, mask), 2, f"{NP}(…)")
    want_out, want_w = ref.scaled_dot_product_attention_np(Q, K, V, mask)
    checks.expect_output_and_weights(out, w, want_out, want_w, inputs, rtol=1e-7, atol=1e-9,
                                     mistakes=lambda which: mistakes.forward(Q, K, V, mask, which))
    common.expect_masked_zero(w, mask, "weights", inputs)


@pytest.mark.covers(NP, f"{NP}:mask/(m,)")
@pytest.mark.points(0.25)
@pytest.mark.contract("conventions/masks", "conventions/mask-shapes")
def test_np_key_mask_vector(student):
    """NumPy attention with a 1-D (m,) key mask, broadcast over queries and batch"""
    Q, K, V = common.qkv(62, (2,), n=3, m=5, d_k=3, d_v=2)
    _expect_np(student, Q, K, V, common.mask(62, (5,)))


@pytest.mark.points(0.25)
@pytest.mark.parametrize("shape", [
    pytest.param(s, id=f"mask {label}", marks=pytest.mark.covers(BACK, f"{BACK}:mask/{label}"))
    for s, label in (((2, 1, 5), "(B, 1, m)"), ((2, 3, 5), "(B, n, m)"), ((5,), "(m,)"))])
@pytest.mark.contract("attention_backward_np/gradients", "conventions/mask-shapes")
def test_backward_mask_shapes(student, shape):
    """attention_backward_np with each broadcastable mask shape matches the reference"""
    Q, K, V = common.qkv(63, (2,), n=3, m=5, d_k=3, d_v=2)
    dO = common.rng(64).normal(size=(2, 3, 2))
    mask = common.mask(63 + len(shape), shape)
    inputs = checks.describe_inputs(d_output=dO, Q=Q, K=K, V=V, mask=mask)
    got = checks.expect_tuple(getattr(student.attention, BACK)(dO, Q, K, V, mask), 3, f"{BACK}(…)")
    want = ref.attention_backward_np(dO, Q, K, V, mask)
    for i in (2, 0, 1):
        name = ("dQ", "dK", "dV")[i]
        checks.expect_shape(got[i], want[i].shape, name, inputs)
        checks.expect_close(got[i], want[i], name, inputs=inputs, rtol=1e-6, atol=1e-9,
                            mistakes=lambda i=i: mistakes.backward(dO, Q, K, V, mask, which=i))


@pytest.mark.points(0.25)
@pytest.mark.parametrize("shape", [
    pytest.param(s, id=f"mask {label}", marks=pytest.mark.covers(TORCH, f"{TORCH}:mask/{label}"))
    for s, label in (((2, 3, 5), "(B, n, m)"), ((5,), "(m,)"))])
@pytest.mark.contract("scaled_dot_product_attention/torch", "conventions/masks", "conventions/mask-shapes")
def test_torch_mask_shapes(student, shape):
    """torch attention with each broadcastable mask shape: masked weights exactly 0"""
    Q, K, V = common.to_torch(*common.qkv(65, (2,), n=3, m=5, d_k=4, d_v=2))
    mask = torch.from_numpy(common.mask(65 + len(shape), shape))
    inputs = checks.describe_inputs(Q=Q, K=K, V=V, mask=mask)
    out, w = checks.expect_tuple(getattr(student.attention, TORCH)(Q, K, V, mask), 2, f"{TORCH}(…)")
    want_out, want_w = ref.scaled_dot_product_attention(Q, K, V, mask)
    checks.expect_output_and_weights(out, w, want_out, want_w, inputs, rtol=1e-7, atol=1e-9,
                                     dtype=torch.float64,
                                     mistakes=lambda which: mistakes.forward(Q, K, V, mask, which))
    common.expect_masked_zero(w, mask.numpy(), "weights", inputs)
