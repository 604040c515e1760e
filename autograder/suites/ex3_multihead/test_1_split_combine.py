"""ex3 · split_heads / combine_heads: shapes, which features go to which head, round trip."""
from __future__ import annotations

import pytest
import torch

import reference.multihead as ref
from autograder import seeds
from autograder.diagnosis import ex3 as mistakes
from autograder.suites.checks import (describe_inputs, expect_all_finite, expect_close, expect_dtype,
                                      expect_shape, fail)


def _x(seed: int, shape=(2, 5, 12), dtype=torch.float32) -> torch.Tensor:
    g = seeds.generator(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


@pytest.mark.points(1)
@pytest.mark.covers("split_heads")
@pytest.mark.contract("split_heads/features")
def test_split_shape(student):
    """split_heads maps (B, n, d_model) to (B, h, n, d_model // h)"""
    x = _x(4401)
    got = student.multihead.split_heads(x, 3)
    expect_shape(got, (2, 3, 5, 4), "split_heads(x, num_heads=3)", describe_inputs(x=x))
    expect_all_finite(got, "split_heads(x, num_heads=3)", describe_inputs(x=x))


@pytest.mark.points(2)
@pytest.mark.covers("split_heads")
@pytest.mark.contract("split_heads/features", "split_heads/signature")
@pytest.mark.covers("split_heads:args/num_heads")
def test_split_features(student):
    """split_heads gives head i the features i·d_head … (i+1)·d_head − 1"""
    x = _x(4402, (3, 4, 12))
    for h in (3, 2):
        got = student.multihead.split_heads(x, h)
        what = f"split_heads(x, num_heads={h})"
        expect_shape(got, (3, h, 4, 12 // h), what, describe_inputs(x=x))
        expect_close(got, ref.split_heads(x.double(), h), what, inputs=describe_inputs(x=x),
                     rtol=1e-6, atol=1e-6, mistakes=lambda: mistakes.split_mistakes(x, h))


@pytest.mark.points(2)
@pytest.mark.covers("combine_heads")
@pytest.mark.contract("combine_heads/inverse")
def test_combine_features(student):
    """combine_heads puts head i's features back at positions i·d_head … (i+1)·d_head − 1"""
    x = _x(4403, (2, 3, 5, 4))
    got = student.multihead.combine_heads(x)
    what = "combine_heads(x)"
    expect_shape(got, (2, 5, 12), what, describe_inputs(x=x))
    expect_close(got, ref.combine_heads(x.double()), what, inputs=describe_inputs(x=x),
                 rtol=1e-6, atol=1e-6, mistakes=lambda: mistakes.combine_mistakes(x))


@pytest.mark.points(1.5)
@pytest.mark.covers("combine_heads", "split_heads")
@pytest.mark.contract("combine_heads/inverse")
def test_round_trip(student):
    """combine_heads(split_heads(x, h)) gives back x"""
    x = _x(4404, (2, 6, 8))
    split = student.multihead.split_heads(x, 4)
    back = student.multihead.combine_heads(split)
    expect_close(back, x, "combine_heads(split_heads(x, 4))", inputs=describe_inputs(x=x),
                 rtol=1e-6, atol=1e-6)


@pytest.mark.points(1)
@pytest.mark.covers("combine_heads", "split_heads")
@pytest.mark.contract("conventions/dtype", "conventions/differentiable")
@pytest.mark.covers("split_heads:dtype/float64", "split_heads:grad", "combine_heads:dtype/float64", "combine_heads:grad")
def test_float64_and_differentiable(student, support):
    """split_heads and combine_heads keep float64 and pass gradients through"""
    x = _x(4405, (2, 3, 6), dtype=torch.float64)
    split = student.multihead.split_heads(x, 2)
    expect_dtype(split, torch.float64, "split_heads(float64 x, 2)")
    expect_dtype(student.multihead.combine_heads(split), torch.float64, "combine_heads(float64 x)")
    g = _x(4406, (2, 2, 3, 3), dtype=torch.float64)
    (grad,) = support.modules.input_grads(student.multihead.split_heads, [x, 2], {}, [0], g, None)
    if grad is None:
        fail("split_heads(x, 2): no gradient flows back to x (is something on the path "
             "detached: .detach(), .numpy(), .item() or a new torch.tensor(...)?)")
    expect_close(grad, ref.combine_heads(g), "the gradient of split_heads w.r.t. x",
                 inputs=describe_inputs(x=x), rtol=1e-12, atol=1e-12)
