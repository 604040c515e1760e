"""Exercise 1 — Scaled dot-product attention.

Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, with d_k = Q.shape[-1].
Masks are boolean and True means "may attend".
"""
from __future__ import annotations

import math

import numpy as np
import torch


# ----------------------------------------------------------------------------- NumPy

def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis`` (computed in float64)."""
    x = np.asarray(x, dtype=np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def _scores_np(Q, K, mask=None):
    """Scaled (and masked) scores ``Q K^T / sqrt(d_k)``."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    return scores


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    """NumPy scaled dot-product attention.

    Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v); mask broadcastable to (..., n, m).
    Returns (output (..., n, d_v), weights (..., n, m)).
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    weights = softmax(_scores_np(Q, K, mask), axis=-1)
    output = weights @ V
    return output, weights


def _sum_to_shape(grad: np.ndarray, shape) -> np.ndarray:
    """Sum a gradient over broadcast leading dims so that it has ``shape``."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def attention_backward_np(d_output, Q, K, V, mask=None):
    """Gradients of ``sum(d_output * output)`` with respect to Q, K and V."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    d_output = np.asarray(d_output, dtype=np.float64)
    scale = 1.0 / np.sqrt(Q.shape[-1])

    P = softmax(_scores_np(Q, K, mask), axis=-1)              # (..., n, m)

    dV = np.swapaxes(P, -1, -2) @ d_output                      # (..., m, d_v)
    dP = d_output @ np.swapaxes(V, -1, -2)                      # (..., n, m)
    # softmax backward: dS = P * (dP - sum_j dP_j P_j)
    dS = P * (dP - np.sum(dP * P, axis=-1, keepdims=True))
    dQ = dS @ K * scale                                         # (..., n, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q * scale                    # (..., m, d_k)

    return _sum_to_shape(dQ, Q.shape), _sum_to_shape(dK, K.shape), _sum_to_shape(dV, V.shape)


def numerical_gradient(f, x, eps=1e-6) -> np.ndarray:
    """Central-difference gradient of the scalar function ``f`` at ``x``.

    ``x`` is left unchanged: the perturbations are applied to a copy.
    """
    x_work = np.array(x, dtype=np.float64, copy=True)
    grad = np.zeros_like(x_work)
    for idx in np.ndindex(x_work.shape):
        old = x_work[idx]
        x_work[idx] = old + eps
        f_plus = float(f(x_work))
        x_work[idx] = old - eps
        f_minus = float(f(x_work))
        x_work[idx] = old
        grad[idx] = (f_plus - f_minus) / (2 * eps)
    return grad


# ----------------------------------------------------------------------------- PyTorch

def scaled_dot_product_attention(Q, K, V, mask=None):
    """PyTorch scaled dot-product attention (same shapes and semantics as the NumPy one)."""
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    output = weights @ V
    return output, weights
