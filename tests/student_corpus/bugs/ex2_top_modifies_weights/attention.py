"""Exercise 1 — Scaled dot-product attention (student solution)."""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
import torch


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    weights = softmax(scores, axis=-1)
    output = weights @ V
    return output, weights


def attention_backward_np(d_output, Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    dO = np.asarray(d_output, dtype=np.float64)
    d_k = Q.shape[-1]
    scale = 1.0 / math.sqrt(d_k)
    _, P = scaled_dot_product_attention_np(Q, K, V, mask)
    dV = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
    dS = P * (dP - np.sum(dP * P, axis=-1, keepdims=True))
    dQ = dS @ K * scale
    dK = np.swapaxes(dS, -1, -2) @ Q * scale
    # Q, K, V may have been broadcast: shapes are the same by contract
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x, dtype=np.float64)
    xp = x.copy()
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = xp[idx]
        xp[idx] = old + eps
        f_plus = float(f(xp))
        xp[idx] = old - eps
        f_minus = float(f(xp))
        xp[idx] = old
        grad[idx] = (f_plus - f_minus) / (2 * eps)
    return grad


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    output = torch.matmul(weights, V)
    return output, weights
