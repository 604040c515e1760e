"""Baseline for the lying cases: honest junk (NaN) of the right shapes and dtypes.

Such a file earns nothing (NaN fails shape, "runs" and "inputs are not modified" checks too), and that is the most
an object that lies about equality may earn."""
import numpy as np
import torch


def softmax(x, axis=-1):
    return np.full(np.shape(x), np.nan)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    lead, n, m = np.shape(Q)[:-2], np.shape(Q)[-2], np.shape(K)[-2]
    return np.full(lead + (n, np.shape(V)[-1]), np.nan), np.full(lead + (n, m), np.nan)


def attention_backward_np(d_output, Q, K, V, mask=None):
    return tuple(np.full(np.shape(a), np.nan) for a in (Q, K, V))


def numerical_gradient(f, x, eps=1e-6):
    return np.full(np.shape(x), np.nan)


def scaled_dot_product_attention(Q, K, V, mask=None):
    lead, n, m = tuple(Q.shape[:-2]), Q.shape[-2], K.shape[-2]
    out = torch.full((*lead, n, V.shape[-1]), float("nan"), dtype=Q.dtype) + 0 * Q.sum()
    w = torch.full((*lead, n, m), float("nan"), dtype=Q.dtype) + 0 * K.sum()
    return out, w
