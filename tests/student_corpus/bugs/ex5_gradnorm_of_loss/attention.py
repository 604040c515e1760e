"""Exercise 1 — scaled dot-product attention, written with einsum."""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
import torch

NEG = -1e9


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.array(x, dtype=np.float64)          # a copy
    z = z - z.max(axis=axis, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=axis, keepdims=True)
    return z


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    s = np.einsum("...nd,...md->...nm", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, NEG)
    w = softmax(s, axis=-1)
    out = np.einsum("...nm,...mv->...nv", w, V)
    return out, w


def attention_backward_np(d_output, Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    g = np.asarray(d_output, dtype=np.float64)
    c = 1.0 / np.sqrt(Q.shape[-1])
    _, w = scaled_dot_product_attention_np(Q, K, V, mask)
    dV = np.einsum("...nm,...nv->...mv", w, g)
    dw = np.einsum("...nv,...mv->...nm", g, V)
    ds = w * (dw - np.einsum("...nm,...nm->...n", dw, w)[..., None])
    if mask is not None:
        ds = np.where(mask, ds, 0.0)
    dQ = c * np.einsum("...nm,...md->...nd", ds, K)
    dK = c * np.einsum("...nm,...nd->...md", ds, Q)
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    base = np.array(x, dtype=np.float64)      # private copy, x itself never touched
    flat = base.reshape(-1)
    grad = np.empty(flat.size, dtype=np.float64)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        up = f(base)
        flat[i] = keep - eps
        down = f(base)
        flat[i] = keep
        grad[i] = (up - down) / (2.0 * eps)
    return grad.reshape(base.shape)


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = torch.einsum("...nd,...md->...nm", Q, K) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), NEG)
    w = torch.softmax(s, dim=-1)
    out = torch.einsum("...nm,...mv->...nv", w, V)
    return out, w
