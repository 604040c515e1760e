"""ex3 · the contract's general rules: inputs of every kind left alone, dtype and device kept
(meta tensors), a per-head mask (the exercise's rows in exercise.py list what each test covers)."""
from __future__ import annotations

import pytest
import torch

from autograder import seeds
from autograder.suites.checks import expect_dtype
from autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta, kind_id
from autograder.suites.ex3_multihead.common import (B, D_MODEL, HEADS, M, N, expect_forward, inputs,
                                                    random_mask)

FORWARD = "MultiHeadAttention.forward"
KINDS = ("tensor", "shared", "grad")


def _x(offset: int, shape: tuple[int, ...], dtype=torch.float32) -> torch.Tensor:
    """A hidden input drawn from the test's derived seed ``offset`` (autograder.seeds)."""
    return torch.randn(*shape, generator=seeds.generator(offset), dtype=torch.float64).to(dtype)


def _kinds(name: str):
    return [pytest.param(k, id=kind_id(k), marks=pytest.mark.covers(name.split(".")[0], f"{name}:inputs/{k}"))
            for k in KINDS]


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", _kinds("split_heads"))
@pytest.mark.contract("conventions/inputs")
def test_split_heads_leaves_input_unchanged(student, support, kind):
    """split_heads leaves x unchanged"""
    expect_inputs_unchanged(support, student.multihead.split_heads, "multihead.split_heads",
                            [_x(4501, (2, 3, 6)), 2], ["x", "num_heads"], kind, which=[0])


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", _kinds("combine_heads"))
@pytest.mark.contract("conventions/inputs")
def test_combine_heads_leaves_input_unchanged(student, support, kind):
    """combine_heads leaves x unchanged"""
    expect_inputs_unchanged(support, student.multihead.combine_heads, "multihead.combine_heads",
                            [_x(4502, (2, 2, 3, 3))], ["x"], kind)


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", _kinds(FORWARD))
@pytest.mark.contract("conventions/inputs")
def test_forward_leaves_inputs_unchanged(mha, support, kind):
    """MultiHeadAttention.forward leaves query, key, value and the mask unchanged"""
    q, k, v = inputs(5301)
    mask = random_mask((N, M), seed=5302)
    expect_inputs_unchanged(support, mha, "MultiHeadAttention.forward", [q, k, v, mask],
                            ["query", "key", "value", "mask"], kind)


@pytest.mark.covers("split_heads", "combine_heads", "split_heads:dtype/float32", "combine_heads:dtype/float32")
@pytest.mark.points(0.25)
@pytest.mark.contract("conventions/dtype")
def test_split_combine_keep_float32(student):
    """split_heads and combine_heads keep float32"""
    x = _x(4503, (2, 3, 6))
    split = student.multihead.split_heads(x, 3)
    expect_dtype(split, torch.float32, "split_heads(float32 x, 3)")
    expect_dtype(student.multihead.combine_heads(_x(4504, (2, 3, 3, 2))), torch.float32,
                 "combine_heads(float32 x)")


@pytest.mark.covers("split_heads", "combine_heads", "split_heads:device", "combine_heads:device")
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/device")
def test_split_combine_keep_device(student, support):
    """split_heads and combine_heads keep the device (meta tensors in, meta tensors out)"""
    expect_on_meta(support, student.multihead.split_heads, "multihead.split_heads", [_x(4505, (2, 5, 6)), 3],
                   outputs=["the result"], dtype="float32", shapes=[(2, 3, 5, 2)], which=[0])
    expect_on_meta(support, student.multihead.combine_heads, "multihead.combine_heads", [_x(4506, (2, 3, 5, 2))],
                   outputs=["the result"], dtype="float32", shapes=[(2, 5, 6)])


@pytest.mark.covers("MultiHeadAttention", f"{FORWARD}:device")
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/device")
def test_forward_keeps_device(student, support):
    """MultiHeadAttention on the meta device returns meta tensors of the input's dtype"""
    model = student.multihead.MultiHeadAttention(D_MODEL, HEADS)
    q, k, v = inputs(5303)
    mask = random_mask((N, M), seed=5304)
    expect_on_meta(support, model, "MultiHeadAttention.forward (module and inputs on the meta device)",
                   [q, k, v, mask], outputs=["output", "weights"], dtype="float32",
                   shapes=[(B, N, D_MODEL), (B, HEADS, N, M)])


@pytest.mark.covers("MultiHeadAttention", f"{FORWARD}:mask/(B, h, n, m)")
@pytest.mark.points(0.5)
@pytest.mark.contract("MultiHeadAttention.forward/mask")
def test_mask_per_head(mha, state):
    """a (B, h, n, m) mask, a different pattern per head"""
    q, k, v = inputs(5305)
    mask = random_mask((B, HEADS, N, M), seed=5306)
    expect_forward(mha(q, k, v, mask), state, q, k, v, mask, "mha(query, key, value, mask (B, h, n, m))")
