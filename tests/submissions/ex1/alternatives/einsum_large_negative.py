"""Attention with einsum, -1e9 fills, torch.where, and a flat-index gradient checker."""
import numpy as np
import torch


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return np.exp(z - log_norm)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = np.einsum("...nd,...md->...nm", Q, K) / d_k ** 0.5
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -1e9)
    weights = softmax(scores, axis=-1)
    return np.einsum("...nm,...mv->...nv", weights, V), weights


def attention_backward_np(d_output, Q, K, V, mask=None):
    d_k = Q.shape[-1]
    _, P = scaled_dot_product_attention_np(Q, K, V, mask)
    dV = np.einsum("...nm,...nv->...mv", P, d_output)
    dP = np.einsum("...nv,...mv->...nm", d_output, V)
    dS = P * (dP - np.einsum("...nm,...nm->...n", dP, P)[..., None])
    dQ = np.einsum("...nm,...md->...nd", dS, K) / np.sqrt(d_k)
    dK = np.einsum("...nm,...nd->...md", dS, Q) / np.sqrt(d_k)
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    base = np.array(x, dtype=np.float64)
    flat = base.ravel()
    grad = np.empty(flat.size)
    for i in range(flat.size):
        step = np.zeros(flat.size)
        step[i] = eps
        plus = (flat + step).reshape(base.shape)
        minus = (flat - step).reshape(base.shape)
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad.reshape(base.shape)


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = torch.einsum("...nd,...md->...nm", Q, K) / d_k ** 0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(-1e9, dtype=scores.dtype))
    weights = scores.softmax(dim=-1)
    return torch.einsum("...nm,...mv->...nv", weights, V), weights
