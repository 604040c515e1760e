"""ex1: scaled dot-product attention, written from the contract (einsum + log-sum-exp)."""
import math

import numpy as np
import torch

NEG = -1e9  # score given to masked positions


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)


def _np_forward(Q, K, V, mask):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    scores = np.einsum("...nd,...md->...nm", Q, K) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, NEG)
    weights = softmax(scores, axis=-1)
    output = np.einsum("...nm,...mv->...nv", weights, V)
    return Q, K, V, weights, output


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    *_, weights, output = _np_forward(Q, K, V, mask)
    return output, weights


def attention_backward_np(d_output, Q, K, V, mask=None):
    Q, K, V, P, _ = _np_forward(Q, K, V, mask)
    G = np.asarray(d_output, dtype=np.float64)
    scale = 1.0 / math.sqrt(Q.shape[-1])
    dV = np.einsum("...nm,...nv->...mv", P, G)
    dP = np.einsum("...nv,...mv->...nm", G, V)
    row = np.einsum("...nm,...nm->...n", dP, P)[..., None]
    dS = P * (dP - row) * scale
    dQ = np.einsum("...nm,...md->...nd", dS, K)
    dK = np.einsum("...nm,...nd->...md", dS, Q)
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    base = np.array(x, dtype=np.float64)          # a private copy; the caller's x is not touched
    grad = np.zeros(base.shape, dtype=np.float64)
    for index in np.ndindex(base.shape):
        original = base[index]
        base[index] = original + eps
        f_plus = float(f(base.copy()))
        base[index] = original - eps
        f_minus = float(f(base.copy()))
        base[index] = original
        grad[index] = (f_plus - f_minus) / (2.0 * eps)
    return grad


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.einsum("...nd,...md->...nm", Q, K) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.full((), NEG, dtype=scores.dtype, device=scores.device))
    weights = torch.softmax(scores, dim=-1)
    output = torch.einsum("...nm,...mv->...nv", weights, V)
    return output, weights
