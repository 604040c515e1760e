"""A loop-heavy style: one (n, m) matrix at a time, explicit softmax Jacobians, in-place
perturbation of a private copy, and masked_fill with the dtype's lowest value."""
import math

import numpy as np
import torch


def softmax(x, axis=-1):
    x = np.array(x, dtype=np.float64)
    moved = np.moveaxis(x, axis, -1)
    out = np.empty_like(moved)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        e = np.exp(row - np.max(row))
        out[idx] = e / e.sum()
    return np.moveaxis(out, -1, axis)


def _one(q, k, v, mask):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = softmax(scores, axis=1)
    return w @ v, w


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    lead = Q.shape[:-2]
    n, m = Q.shape[-2], K.shape[-2]
    full_mask = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), lead + (n, m))
    out = np.zeros(lead + (n, V.shape[-1]))
    weights = np.zeros(lead + (n, m))
    for idx in np.ndindex(lead):
        out[idx], weights[idx] = _one(Q[idx], K[idx], V[idx], None if full_mask is None else full_mask[idx])
    return out, weights


def attention_backward_np(d_output, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(a, dtype=np.float64) for a in (d_output, Q, K, V))
    _, P = scaled_dot_product_attention_np(Q, K, V, mask)
    scale = 1 / math.sqrt(Q.shape[-1])
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for idx in np.ndindex(Q.shape[:-2]):
        p, do, q, k, v = P[idx], dO[idx], Q[idx], K[idx], V[idx]
        dV[idx] = p.T @ do
        dp = do @ v.T
        ds = np.zeros_like(p)
        for i in range(p.shape[0]):
            jac = np.diag(p[i]) - np.outer(p[i], p[i])
            ds[i] = jac @ dp[i]
        dQ[idx] = ds @ k * scale
        dK[idx] = ds.T @ q * scale
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    work = np.array(x, dtype=np.float64, copy=True)
    grad = np.zeros_like(work)
    it = np.nditer(work, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        saved = work[i].copy()
        work[i] = saved + eps
        hi = f(work)
        work[i] = saved - eps
        lo = f(work)
        work[i] = saved
        grad[i] = (hi - lo) / (2.0 * eps)
    return grad


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.transpose(-1, -2)) / math.sqrt(K.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
    weights = torch.nn.functional.softmax(scores, dim=-1)
    return torch.matmul(weights, V), weights
