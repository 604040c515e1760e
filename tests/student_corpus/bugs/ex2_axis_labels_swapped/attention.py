"""Exercise 1 — scaled dot-product attention.

Style: every computation is done in float64 internally; the torch version casts the
result back to the dtype of Q at the end (casting with .to() keeps the autograd graph).
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
import torch


def _f64(a):
    return np.asarray(a).astype(np.float64, copy=True)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = _f64(x)
    m = np.max(z, axis=axis, keepdims=True)
    ez = np.exp(z - m)
    return ez / np.sum(ez, axis=axis, keepdims=True)


def _forward(Q, K, V, mask):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    S = np.matmul(Q, np.swapaxes(K, -1, -2)) * scale
    if mask is not None:
        S = np.where(np.asarray(mask).astype(bool), S, -np.inf)
    P = softmax(S, axis=-1)
    return np.matmul(P, V), P, scale


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    out, P, _ = _forward(_f64(Q), _f64(K), _f64(V), mask)
    return out, P


def attention_backward_np(d_output, Q, K, V, mask=None):
    Q, K, V, dO = _f64(Q), _f64(K), _f64(V), _f64(d_output)
    _, P, scale = _forward(Q, K, V, mask)
    dV = np.matmul(np.swapaxes(P, -1, -2), dO)
    dP = np.matmul(dO, np.swapaxes(V, -1, -2))
    row = np.sum(P * dP, axis=-1, keepdims=True)
    dS = P * (dP - row)
    dQ = np.matmul(dS, K) * scale
    dK = np.matmul(np.swapaxes(dS, -1, -2), Q) * scale
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    x0 = _f64(x)
    g = np.zeros_like(x0)
    for i in range(x0.size):
        idx = np.unravel_index(i, x0.shape)
        xp = x0.copy()
        xm = x0.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (float(f(xp)) - float(f(xm))) / (2.0 * eps)
    return g


def scaled_dot_product_attention(Q, K, V, mask=None):
    dtype = Q.dtype
    q, k, v = Q.to(torch.float64), K.to(torch.float64), V.to(torch.float64)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(torch.logical_not(mask), float("-inf"))
    w = torch.softmax(s, dim=-1)
    out = w @ v
    return out.to(dtype), w.to(dtype)
