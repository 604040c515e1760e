"""ex1 reference: scaled dot-product attention in NumPy (forward, backward) and PyTorch.

Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, with d_k = Q.shape[-1].

Shapes (any number, ≥ 0, of shared leading dims "..."):
    Q (..., n, d_k)   K (..., m, d_k)   V (..., m, d_v)
    weights (..., n, m)   output (..., n, d_v)

Masks are boolean, ``True`` = "may attend", broadcastable to the scores' shape
``(..., n, m)``. Masked scores are filled with ``-inf``; every query row is assumed to
have at least one allowed key.

NumPy functions compute and return float64 whatever the input's float type. The torch
function keeps the input's dtype and device and stays differentiable.

This is the grader's oracle: written for clarity and numerical care, not speed.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

__all__ = [
    "softmax",
    "scaled_dot_product_attention_np",
    "attention_backward_np",
    "numerical_gradient",
    "scaled_dot_product_attention",
]


# --------------------------------------------------------------------------- NumPy

def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``, computed in float64.

    Subtracting the row maximum leaves the result unchanged (softmax is shift
    invariant) and keeps every exponent ≤ 0, so nothing overflows even for entries of
    magnitude 1e4. Entries equal to ``-inf`` get probability 0.
    """
    x = np.asarray(x, dtype=np.float64)
    x_max = np.max(x, axis=axis, keepdims=True)          # finite if the row has one finite entry
    e = np.exp(x - x_max)                                # all in [0, 1], the max entry is 1
    return e / np.sum(e, axis=axis, keepdims=True)


def _masked_scores_np(Q: np.ndarray, K: np.ndarray, mask) -> np.ndarray:
    """Scaled scores Q Kᵀ / √d_k (float64), ``-inf`` where ``mask`` is False. (..., n, m)"""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)  # (..., n, m)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    return scores


def scaled_dot_product_attention_np(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(Q Kᵀ / √d_k) V in NumPy (float64).

    Args:
        Q: (..., n, d_k) queries.  K: (..., m, d_k) keys.  V: (..., m, d_v) values.
        mask: optional boolean array broadcastable to (..., n, m); True = may attend.

    Returns:
        output (..., n, d_v) and weights (..., n, m), both float64.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    weights = softmax(_masked_scores_np(Q, K, mask), axis=-1)   # (..., n, m)
    output = weights @ V                                        # (..., n, d_v)
    return output, weights


def _sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Undo broadcasting: sum ``grad`` over the dims that were broadcast to reach it."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def attention_backward_np(
    d_output: np.ndarray,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic gradients of ``sum(d_output * output)`` w.r.t. Q, K and V (float64).

    With S = Q Kᵀ / √d_k (masked), P = softmax(S) row-wise and O = P V:

        dV = Pᵀ dO                      (..., m, d_v)
        dP = dO Vᵀ                      (..., n, m)
        dS = P ⊙ (dP − rowsum(dP ⊙ P))  softmax Jacobian-vector product; 0 where masked
        dQ = dS K / √d_k                (..., n, d_k)
        dK = dSᵀ Q / √d_k               (..., m, d_k)

    Masked positions have P = 0, hence dS = 0: they contribute nothing to dQ or dK.

    Args:
        d_output: (..., n, d_v), the upstream gradient dO.
        Q, K, V, mask: as in :func:`scaled_dot_product_attention_np`.

    Returns:
        dQ, dK, dV with the shapes of Q, K and V.
    """
    dO, Q, K, V = (np.asarray(a, dtype=np.float64) for a in (d_output, Q, K, V))
    scale = 1.0 / math.sqrt(Q.shape[-1])
    P = softmax(_masked_scores_np(Q, K, mask), axis=-1)      # (..., n, m)

    dV = np.swapaxes(P, -1, -2) @ dO                         # (..., m, d_v)
    dP = dO @ np.swapaxes(V, -1, -2)                         # (..., n, m)
    dS = P * (dP - np.sum(dP * P, axis=-1, keepdims=True))   # (..., n, m)
    dQ = dS @ K * scale                                      # (..., n, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q * scale                 # (..., m, d_k)
    return _sum_to_shape(dQ, Q.shape), _sum_to_shape(dK, K.shape), _sum_to_shape(dV, V.shape)


def numerical_gradient(
    f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6
) -> np.ndarray:
    """Central-difference gradient of a scalar function ``f`` at ``x``.

    grad[i] = (f(x + eps·e_i) − f(x − eps·e_i)) / (2·eps) for every element i.
    ``f`` is evaluated on a private float64 copy, so ``x`` is left unchanged.

    Returns:
        float64 array of ``x``'s shape.
    """
    x_work = np.array(x, dtype=np.float64, copy=True)
    grad = np.zeros_like(x_work)
    flat, grad_flat = x_work.reshape(-1), grad.reshape(-1)     # views into the copies
    for i in range(flat.size):
        original = flat[i]
        flat[i] = original + eps
        f_plus = float(f(x_work))
        flat[i] = original - eps
        f_minus = float(f(x_work))
        flat[i] = original                                     # restore before the next element
        grad_flat[i] = (f_plus - f_minus) / (2.0 * eps)
    return grad


# --------------------------------------------------------------------------- PyTorch

def scaled_dot_product_attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """PyTorch softmax(Q Kᵀ / √d_k) V; same shapes and semantics as the NumPy version.

    Keeps the dtype and device of Q and is differentiable w.r.t. Q, K and V.

    Args:
        Q: (..., n, d_k)   K: (..., m, d_k)   V: (..., m, d_v)
        mask: optional boolean tensor broadcastable to (..., n, m); True = may attend.

    Returns:
        output (..., n, d_v) and weights (..., n, m).
    """
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)              # (..., n, m)
    if mask is not None:
        mask = torch.as_tensor(mask, dtype=torch.bool, device=scores.device)
        scores = torch.where(mask, scores, float("-inf"))         # broadcasts both ways
    weights = torch.softmax(scores, dim=-1)                        # (..., n, m)
    output = weights @ V                                           # (..., n, d_v)
    return output, weights
