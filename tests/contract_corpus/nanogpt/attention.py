"""Exercise 1: scaled dot-product attention, written the nanoGPT way.

The PyTorch function follows nanoGPT's "manual implementation of attention" in
CausalSelfAttention.forward: ``(q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))``,
``masked_fill(mask == 0, float('-inf'))`` and ``F.softmax(att, dim=-1)``.
"""
import math

import numpy as np
import torch
from torch.nn import functional as F


# ----------------------------------------------------------------------------- NumPy

def softmax(x, axis=-1):
    """Numerically stable softmax along ``axis`` (float64)."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k)) V in NumPy; returns (output, weights)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    att = (Q @ np.swapaxes(K, -2, -1)) * (1.0 / math.sqrt(K.shape[-1]))
    if mask is not None:
        att = np.where(np.asarray(mask) == 0, -np.inf, att)
    att = softmax(att, axis=-1)
    y = att @ V
    return y, att


def attention_backward_np(d_output, Q, K, V, mask=None):
    """Gradients of sum(d_output * output) with respect to Q, K and V."""
    dy = np.asarray(d_output, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    scale = 1.0 / math.sqrt(K.shape[-1])
    _, att = scaled_dot_product_attention_np(Q, K, V, mask)
    # y = att @ v
    dV = np.swapaxes(att, -2, -1) @ dy
    datt = dy @ np.swapaxes(V, -2, -1)
    # att = softmax(s): ds = att * (datt - sum(datt * att))
    ds = att * (datt - np.sum(datt * att, axis=-1, keepdims=True))
    # s = scale * q @ k^T  (masked entries have att == 0, hence ds == 0)
    dQ = (ds @ K) * scale
    dK = (np.swapaxes(ds, -2, -1) @ Q) * scale
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    """Central-difference gradient of ``f`` at ``x``; ``x`` itself is never written."""
    x = np.asarray(x, dtype=np.float64)
    xp = x.copy()                     # perturb a private copy
    flat = xp.reshape(-1)             # a view of the copy
    grad = np.zeros(x.size, dtype=np.float64)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        fp = f(xp)
        flat[i] = old - eps
        fm = f(xp)
        flat[i] = old
        grad[i] = (fp - fm) / (2 * eps)
    return grad.reshape(x.shape)


# ----------------------------------------------------------------------------- PyTorch

def scaled_dot_product_attention(Q, K, V, mask=None):
    """PyTorch version of :func:`scaled_dot_product_attention_np`."""
    att = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(K.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ V
    return y, att
