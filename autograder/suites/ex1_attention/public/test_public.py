"""ex1 · public tests: invariants and small hand-checkable values (shipped to students).

Run them with ``python -m autograder check ex1`` in the folder that holds attention.py.
The hidden tests check much more (other shapes, masks, float32/float64, gradients).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from autograder.diagnosis.causes import Cause
from autograder.suites.ex1_attention.causes import Ex1Cause
from autograder.suites.checks import expect_close, expect_tuple, expect_type, fail, likely_cause


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    """softmax along ``axis``, computed here for the expected values and the known mistakes."""
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("softmax/sums-to-one", "softmax/stable")
def test_public_softmax_rows_sum_to_one(student):
    """softmax: each row is non-negative, sums to 1, and survives entries of 1e4"""
    x = np.array([[1.0, 2.0, 3.0], [1e4, 0.0, -1e4]])
    out = np.asarray(student.attention.softmax(x))
    assert out.shape == (2, 3), f"softmax(x) has shape {out.shape}, expected (2, 3)"
    assert np.isfinite(out).all(), "softmax(x) contains NaN or inf for entries of magnitude 1e4"
    assert (out >= 0).all() and np.allclose(out.sum(axis=-1), 1.0), "rows of softmax(x) do not sum to 1"
    e = np.exp([1.0, 2.0, 3.0])
    assert np.allclose(out[0], e / e.sum()), (f"softmax([1, 2, 3]) gave {np.round(out[0], 4).tolist()}, "
                                              f"expected exp(x) / sum(exp(x)) = {np.round(e / e.sum(), 4).tolist()}")


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("attention", "scaled_dot_product_attention_np/shapes")
def test_public_attention_np_hand_computed(student):
    """scaled_dot_product_attention_np: a 1-query example computed by hand"""
    Q = np.array([[2.0, 0.0]])                   # d_k = 2, so scores are divided by sqrt(2)
    K = np.array([[1.0, 0.0], [0.0, 1.0]])
    V = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out, w = expect_tuple(student.attention.scaled_dot_product_attention_np(Q, K, V), 2,
                          "scaled_dot_product_attention_np(Q, K, V)")
    raw = np.array([[2.0, 0.0]])                 # Q Kᵀ
    p = _softmax(raw / math.sqrt(2))
    assert np.shape(w) == (1, 2) and np.shape(out) == (1, 3), \
        f"got weights {np.shape(w)} and output {np.shape(out)}, expected (1, 2) and (1, 3)"
    # the usual mistakes, worked out by hand on this example (each names its cause when it matches)
    mistakes = {Ex1Cause.NO_SCALE: _softmax(raw), Ex1Cause.SCALE_NO_SQRT: _softmax(raw / 2),
                Ex1Cause.SCALE_DV: _softmax(raw / math.sqrt(3)), Ex1Cause.WRONG_AXIS: _softmax(raw, axis=-2)}
    expect_close(w, p, "weights = softmax(Q Kᵀ / √d_k)", rtol=1e-5, atol=1e-8, mistakes=mistakes, reveal=True)
    expect_close(out, p @ V, "output = weights @ V", rtol=1e-5, atol=1e-8, reveal=True)


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("conventions/masks", "attention/signature")
def test_public_mask_true_means_may_attend(student):
    """scaled_dot_product_attention_np and scaled_dot_product_attention: True means may attend, masked weights are exactly 0"""
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5))
    mask = np.tril(np.ones((3, 3), dtype=bool))   # (n, m), broadcast over the batch
    raw = Q @ np.swapaxes(K, -1, -2)                # Q Kᵀ, (2, 3, 3)
    scores = np.where(mask, raw / math.sqrt(4), -np.inf)
    want = np.exp(scores - scores.max(axis=-1, keepdims=True))
    want = want / want.sum(axis=-1, keepdims=True)   # the expected weights, computed here
    for name, call in (("scaled_dot_product_attention_np",
                        lambda: student.attention.scaled_dot_product_attention_np(Q, K, V, mask)),
                       ("scaled_dot_product_attention",
                        lambda: student.attention.scaled_dot_product_attention(
                            torch.tensor(Q), torch.tensor(K), torch.tensor(V), torch.tensor(mask)))):
        _, w = expect_tuple(call(), 2, f"{name}(Q, K, V, mask)")
        w = w.detach().numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
        assert np.shape(w) == (2, 3, 3), f"{name}: weights have shape {np.shape(w)}, expected (2, 3, 3)"
        if not (w[:, ~mask] == 0).all():
            fail(f"{name}: weights where the mask is False must be exactly 0", _mask_cause(w, mask, raw))
        if not np.allclose(w[:, 0, 0], 1.0):
            fail(f"{name}: query 0 may attend only to key 0, so its weight must be 1; got "
                 f"{np.round(w[:, 0, 0], 4).tolist()}", likely_cause(w, _value_mistakes(mask, raw)))
        expect_close(w, want, f"{name}: weights", rtol=1e-5, atol=1e-8, reveal=True,
                     mistakes=lambda: _value_mistakes(mask, raw))


def _mask_cause(w: np.ndarray, mask: np.ndarray, raw: np.ndarray) -> Cause | None:
    """Why keys the mask forbids got weight: True read as *masked* (weight 0 exactly where the
    mask allows, in every row it does not allow entirely), or the mask ignored / scores set to 0."""
    allowed_in_mixed_rows = mask & ~mask.all(axis=-1, keepdims=True)
    if allowed_in_mixed_rows.any() and (w[:, allowed_in_mixed_rows] == 0).all():
        return Ex1Cause.INVERTED_MASK
    return likely_cause(w, {Ex1Cause.MASK_IGNORED: _softmax(raw / 2.0),
                            Ex1Cause.MASK_ZERO: _softmax(np.where(mask, raw / 2.0, 0.0))})


def _value_mistakes(mask: np.ndarray, raw: np.ndarray) -> dict:
    """The usual mistakes on this example: no scaling or the wrong one, the softmax over the
    queries, the mask applied after the softmax (worked out here: d_k = 4, d_v = 5)."""
    def masked(scores: np.ndarray, axis: int = -1) -> np.ndarray:
        return _softmax(np.where(mask, scores, -1e9), axis=axis)
    return {Ex1Cause.NO_SCALE: masked(raw), Ex1Cause.SCALE_NO_SQRT: masked(raw / 4.0),
            Ex1Cause.SCALE_DV: masked(raw / math.sqrt(5)),
            Ex1Cause.WRONG_AXIS: masked(raw / 2.0, axis=-2),
            Ex1Cause.MASK_AFTER: np.where(mask, _softmax(raw / 2.0), 0.0)}


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("scaled_dot_product_attention/torch", "conventions/dtype")
def test_public_torch_keeps_dtype(student):
    """scaled_dot_product_attention keeps float32 and has the right shapes (finite values)"""
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g),
               torch.randn(2, 5, 6, generator=g))
    out, w = expect_tuple(student.attention.scaled_dot_product_attention(Q, K, V), 2,
                          "scaled_dot_product_attention(Q, K, V)")
    expect_type(out, torch.Tensor, "the output")
    expect_type(w, torch.Tensor, "the weights")
    assert tuple(out.shape) == (2, 3, 6) and tuple(w.shape) == (2, 3, 5), \
        f"got output {tuple(out.shape)} and weights {tuple(w.shape)}, expected (2, 3, 6) and (2, 3, 5)"
    assert out.dtype == torch.float32 and w.dtype == torch.float32, \
        f"float32 inputs gave {out.dtype} / {w.dtype}; keep the input's dtype"
    assert bool(torch.isfinite(out.detach()).all() and torch.isfinite(w.detach()).all()), \
        "the output or the weights contain NaN or inf"


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("numerical_gradient/central-differences")
def test_public_numerical_gradient_of_a_quadratic(student, support):
    """numerical_gradient of f(x) = Σ x² is 2x"""
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    # f(x) = sum(x**2), built by the kit next to your code (functions cannot be sent to it)
    f = support.functions.make_function("sin_mix", {"A": np.zeros((1, 4)), "b": np.zeros(1), "c": 1.0})
    grad = student.attention.numerical_gradient(f, x, eps=1e-5)
    assert np.shape(grad) == (2, 2), f"the gradient has shape {np.shape(grad)}, expected (2, 2)"
    assert np.allclose(grad, 2 * x, atol=1e-6), \
        f"the gradient of Σ x² should be 2x = {(2 * x).tolist()}, got {np.round(np.asarray(grad), 6).tolist()}"
