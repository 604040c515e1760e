"""The ex1 oracle against independent implementations: torch's fused attention,
torch.autograd, and brute-force Python loops."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from reference import attention as ref


def _random_mask(rng: np.random.Generator, shape) -> np.ndarray:
    """Random boolean mask of `shape` with at least one True in every last-axis row."""
    mask = rng.random(shape) < 0.6
    first = rng.integers(0, shape[-1], size=shape[:-1])
    np.put_along_axis(mask, first[..., None], True, axis=-1)
    return mask


# Each case: leading dims of Q, n, m, d_k, d_v, mask shape (None = no mask).
CASES = [
    ((), 4, 4, 3, 3, None),                 # unbatched, square
    ((), 4, 6, 3, 5, (4, 6)),               # unbatched, n != m, d_k != d_v
    ((2,), 3, 5, 4, 2, None),
    ((2,), 3, 5, 4, 2, (2, 3, 5)),          # full mask
    ((2,), 5, 3, 2, 4, (1, 5, 3)),          # broadcast over batch
    ((2, 3), 4, 6, 5, 7, (4, 6)),           # extra leading dims, mask broadcasts over both
    ((2, 3), 4, 6, 5, 7, (2, 1, 1, 6)),     # key-padding style mask
    ((2, 3), 2, 2, 1, 1, (2, 3, 2, 2)),
]
IDS = [f"lead{c[0]}-n{c[1]}-m{c[2]}-dk{c[3]}-dv{c[4]}-mask{c[5]}" for c in CASES]


def _make(case, seed=0, dtype=np.float64):
    lead, n, m, d_k, d_v, mask_shape = case
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal(lead + (n, d_k)).astype(dtype)
    K = rng.standard_normal(lead + (m, d_k)).astype(dtype)
    V = rng.standard_normal(lead + (m, d_v)).astype(dtype)
    mask = None if mask_shape is None else _random_mask(rng, mask_shape)
    return Q, K, V, mask


def _brute_force(Q, K, V, mask):
    """Attention by explicit loops over leading indices, queries and keys (float64)."""
    lead, (n, d_k), (m, d_v) = Q.shape[:-2], Q.shape[-2:], V.shape[-2:]
    full_mask = np.ones(lead + (n, m), bool) if mask is None else np.broadcast_to(mask, lead + (n, m))
    out = np.zeros(lead + (n, d_v))
    w = np.zeros(lead + (n, m))
    for idx in itertools.product(*[range(s) for s in lead]):
        for i in range(n):
            scores = {}
            for j in range(m):
                if full_mask[idx + (i, j)]:
                    scores[j] = sum(float(Q[idx + (i, c)]) * float(K[idx + (j, c)])
                                    for c in range(d_k)) / math.sqrt(d_k)
            top = max(scores.values())
            total = sum(math.exp(s - top) for s in scores.values())
            for j, s in scores.items():
                w[idx + (i, j)] = math.exp(s - top) / total
            for c in range(d_v):
                out[idx + (i, c)] = sum(w[idx + (i, j)] * float(V[idx + (j, c)]) for j in range(m))
    return out, w


# --------------------------------------------------------------------------- softmax

def test_softmax_matches_definition_and_sums_to_one():
    x = np.random.default_rng(1).standard_normal((3, 5))
    expected = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(ref.softmax(x), expected, rtol=1e-12)
    np.testing.assert_allclose(ref.softmax(x).sum(-1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_softmax_axis(axis):
    x = np.random.default_rng(2).standard_normal((3, 4, 5))
    moved = np.moveaxis(x, axis, -1)
    expected = np.moveaxis(np.exp(moved) / np.exp(moved).sum(-1, keepdims=True), -1, axis)
    np.testing.assert_allclose(ref.softmax(x, axis=axis), expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_stable_for_large_magnitudes(dtype):
    x = np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]], dtype=dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        p = ref.softmax(x)
    e = math.exp(-1.0)
    expected = np.array([[1 / (1 + e), e / (1 + e), 0.0], [1 / 3, 1 / 3, 1 / 3]])
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p, expected, rtol=1e-12, atol=1e-300)


def test_softmax_shift_invariant_and_input_untouched():
    x = np.random.default_rng(3).standard_normal((4, 6))
    before = x.copy()
    np.testing.assert_allclose(ref.softmax(x + 1234.5), ref.softmax(x), rtol=1e-9)
    np.testing.assert_array_equal(x, before)


def test_softmax_handles_minus_inf_entries():
    p = ref.softmax(np.array([0.0, -np.inf, 0.0]))
    np.testing.assert_allclose(p, [0.5, 0.0, 0.5])


# --------------------------------------------------------------------------- NumPy forward

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_np_attention_matches_torch_sdpa_and_loops(case):
    Q, K, V, mask = _make(case)
    copies = [a.copy() for a in (Q, K, V)]
    out, w = ref.scaled_dot_product_attention_np(Q, K, V, mask)
    m = K.shape[-2]
    assert out.shape == Q.shape[:-1] + V.shape[-1:] and w.shape == Q.shape[:-1] + (m,)
    assert out.dtype == np.float64 and w.dtype == np.float64
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    expected = F.scaled_dot_product_attention(
        t(Q), t(K), t(V), attn_mask=None if mask is None else t(mask)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    bf_out, bf_w = _brute_force(Q, K, V, mask)
    np.testing.assert_allclose(out, bf_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, bf_w, rtol=1e-10, atol=1e-12)
    for a, b in zip((Q, K, V), copies):
        np.testing.assert_array_equal(a, b)


def test_np_attention_accepts_float32_and_returns_float64():
    Q, K, V, mask = _make(CASES[3], dtype=np.float32)
    out, w = ref.scaled_dot_product_attention_np(Q, K, V, mask)
    bf_out, bf_w = _brute_force(Q.astype(np.float64), K.astype(np.float64), V.astype(np.float64), mask)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, bf_out, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- NumPy backward

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_np_backward_matches_autograd(case):
    Q, K, V, mask = _make(case, seed=5)
    dO = np.random.default_rng(6).standard_normal(Q.shape[:-1] + V.shape[-1:])
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (Q, K, V))
    out = F.scaled_dot_product_attention(tq, tk, tv,
                                         attn_mask=None if mask is None else torch.tensor(mask))
    (out * torch.tensor(dO)).sum().backward()
    dQ, dK, dV = ref.attention_backward_np(dO, Q, K, V, mask)
    for got, want in ((dQ, tq.grad), (dK, tk.grad), (dV, tv.grad)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-9, atol=1e-11)


def test_np_backward_masked_keys_get_no_gradient():
    rng = np.random.default_rng(7)
    Q, K, V = rng.standard_normal((3, 2)), rng.standard_normal((4, 2)), rng.standard_normal((4, 3))
    mask = np.array([True, True, False, True])            # key 2 hidden from every query
    _, dK, dV = ref.attention_backward_np(rng.standard_normal((3, 3)), Q, K, V, mask)
    np.testing.assert_array_equal(dK[2], 0.0)
    np.testing.assert_array_equal(dV[2], 0.0)


# --------------------------------------------------------------------------- numerical gradient

def test_numerical_gradient_of_non_separable_function():
    rng = np.random.default_rng(8)
    A = rng.standard_normal((2, 3))
    x = rng.standard_normal((2, 3))
    before = x.copy()

    def f(z):
        return float(np.sin(np.sum(A * z)) * np.exp(0.1 * np.sum(z * z)))

    s, e = np.sum(A * x), np.exp(0.1 * np.sum(x * x))
    analytic = np.cos(s) * A * e + np.sin(s) * e * 0.2 * x
    g = ref.numerical_gradient(f, x)
    assert g.shape == x.shape and g.dtype == np.float64
    np.testing.assert_allclose(g, analytic, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, before)


def test_numerical_gradient_agrees_with_analytic_attention_backward():
    rng = np.random.default_rng(9)
    Q, K, V = rng.standard_normal((3, 2)), rng.standard_normal((4, 2)), rng.standard_normal((4, 3))
    mask = _random_mask(rng, (3, 4))
    dO = rng.standard_normal((3, 3))
    dQ, dK, dV = ref.attention_backward_np(dO, Q, K, V, mask)
    loss = lambda q, k, v: float(np.sum(dO * ref.scaled_dot_product_attention_np(q, k, v, mask)[0]))  # noqa: E731
    np.testing.assert_allclose(ref.numerical_gradient(lambda q: loss(q, K, V), Q), dQ, atol=1e-7)
    np.testing.assert_allclose(ref.numerical_gradient(lambda k: loss(Q, k, V), K), dK, atol=1e-7)
    np.testing.assert_allclose(ref.numerical_gradient(lambda v: loss(Q, K, v), V), dV, atol=1e-7)


# --------------------------------------------------------------------------- torch

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_torch_attention_matches_sdpa(case, dtype):
    Q, K, V, mask = (None if a is None else torch.tensor(a) for a in _make(case, seed=11))
    Q, K, V = Q.to(dtype), K.to(dtype), V.to(dtype)
    out, w = ref.scaled_dot_product_attention(Q, K, V, mask)
    assert out.dtype == dtype and w.dtype == dtype
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(out, expected, **tol)
    np_out, np_w = ref.scaled_dot_product_attention_np(Q.double().numpy(), K.double().numpy(),
                                                       V.double().numpy(),
                                                       None if mask is None else mask.numpy())
    torch.testing.assert_close(w.double(), torch.from_numpy(np_w), **tol)


def test_torch_attention_gradcheck_float64():
    rng = np.random.default_rng(12)
    Q, K, V = (torch.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    mask = torch.tensor(_random_mask(rng, (2, 3, 4)))
    assert torch.autograd.gradcheck(lambda q, k, v: ref.scaled_dot_product_attention(q, k, v, mask),
                                    (Q, K, V))
    assert torch.autograd.gradcheck(lambda q, k, v: ref.scaled_dot_product_attention(q, k, v), (Q, K, V))


def test_torch_attention_keeps_graph_and_inputs():
    Q = torch.randn(2, 3, 4, requires_grad=True)
    K, V = torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    before = Q.detach().clone()
    out, w = ref.scaled_dot_product_attention(Q, K, V, torch.ones(3, 5, dtype=torch.bool))
    assert out.requires_grad and w.requires_grad
    out.sum().backward()
    assert Q.grad is not None and Q.grad.shape == Q.shape
    torch.testing.assert_close(Q.detach(), before, rtol=0, atol=0)


def test_np_backward_with_broadcast_leading_dims():
    """K and V shared across a leading dim of Q: their gradients sum over it."""
    rng = np.random.default_rng(13)
    Q, K, V = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((3, 6, 5)), rng.standard_normal((3, 6, 2))
    mask = _random_mask(rng, (4, 6))
    dO = rng.standard_normal((2, 3, 4, 2))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (Q, K, V))
    scores = (tq @ tk.transpose(-1, -2) / math.sqrt(5)).masked_fill(~torch.tensor(mask), float("-inf"))
    (torch.softmax(scores, -1) @ tv * torch.tensor(dO)).sum().backward()
    for got, want in zip(ref.attention_backward_np(dO, Q, K, V, mask), (tq.grad, tk.grad, tv.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-9, atol=1e-11)
