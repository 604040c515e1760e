"""Exercise 1 — scaled dot-product attention.

I wrote the NumPy parts with explicit loops over the batch dimensions so I could follow
every step, and vectorised only inside one (n, m) matrix.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Optional

import numpy as np
import torch


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x)
    moved = np.moveaxis(x.astype(np.float64), axis, -1)   # astype makes a copy
    result = np.empty_like(moved)
    for idx in itertools.product(*[range(s) for s in moved.shape[:-1]]):
        row = moved[idx]
        top = max(float(v) for v in row)
        exps = np.exp(row - top)
        result[idx] = exps / exps.sum()
    return np.moveaxis(result, -1, axis)


def _single_attention(q, k, v, m):
    """q (n, d), k (m, d), v (m, dv), m (n, m) bool or None."""
    n, d = q.shape
    scores = np.zeros((n, k.shape[0]))
    for i in range(n):
        for j in range(k.shape[0]):
            if m is None or m[i, j]:
                scores[i, j] = np.dot(q[i], k[j]) / math.sqrt(d)
            else:
                scores[i, j] = -np.inf
    w = softmax(scores, axis=-1)
    return w @ v, w


def _batch_loop(Q, K, V, mask, fn):
    lead = Q.shape[:-2]
    n, m = Q.shape[-2], K.shape[-2]
    full_mask = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), lead + (n, m))
    results = None
    for idx in itertools.product(*[range(s) for s in lead]):
        res = fn(Q[idx], K[idx], V[idx], None if full_mask is None else full_mask[idx])
        if results is None:
            results = [np.zeros(lead + r.shape) for r in res]
        for store, r in zip(results, res):
            store[idx] = r
    return tuple(results)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    return _batch_loop(Q, K, V, mask, _single_attention)


def _single_backward(q, k, v, m, g):
    out, w = _single_attention(q, k, v, m)
    d = q.shape[-1]
    dv = w.T @ g
    dw = g @ v.T
    ds = np.zeros_like(w)
    for i in range(w.shape[0]):
        # Jacobian of the softmax row: diag(p) - p p^T
        p = w[i]
        jac = np.diag(p) - np.outer(p, p)
        ds[i] = jac @ dw[i]
    dq = ds @ k / math.sqrt(d)
    dk = ds.T @ q / math.sqrt(d)
    return dq, dk, dv


def attention_backward_np(d_output, Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    G = np.asarray(d_output, dtype=np.float64)
    lead = Q.shape[:-2]
    n, mm = Q.shape[-2], K.shape[-2]
    full_mask = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), lead + (n, mm))
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for idx in itertools.product(*[range(s) for s in lead]):
        dq, dk, dv = _single_backward(Q[idx], K[idx], V[idx],
                                      None if full_mask is None else full_mask[idx], G[idx])
        dQ[idx], dK[idx], dV[idx] = dq, dk, dv
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    x = np.asarray(x)
    grad = np.zeros(x.shape, dtype=np.float64)
    for idx in itertools.product(*[range(s) for s in x.shape]):
        e = np.zeros(x.shape, dtype=np.float64)
        e[idx] = 1.0
        grad[idx] = (f(x + eps * e) - f(x - eps * e)) / (2 * eps)
    return grad


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    scores = Q @ K.transpose(-1, -2)
    scores = scores / math.sqrt(d_k)
    if mask is not None:
        neg_inf = torch.full_like(scores, float("-inf"))
        scores = torch.where(mask, scores, neg_inf)
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ V, weights
