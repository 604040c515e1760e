"""Exercise 1: scaled dot-product attention, the Annotated Transformer way.

``attention(query, key, value, mask=None)`` is the helper of "The Annotated Transformer"
(Harvard NLP): scores ``matmul(query, key^T) / sqrt(d_k)``, ``masked_fill(mask == 0, -1e9)``,
``scores.softmax(dim=-1)``, and it returns ``(matmul(p_attn, value), p_attn)``.
The NumPy functions mirror it line for line.
"""
import math

import numpy as np
import torch


# ----------------------------------------------------------------------------- NumPy

def softmax(x, axis=-1):
    "Numerically stable softmax along `axis`."
    x = np.asarray(x, dtype=np.float64)
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    "Compute 'Scaled Dot Product Attention' (Equation 1) in NumPy."
    query = np.asarray(Q, dtype=np.float64)
    key = np.asarray(K, dtype=np.float64)
    value = np.asarray(V, dtype=np.float64)
    d_k = query.shape[-1]
    scores = np.matmul(query, np.swapaxes(key, -2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = np.where(np.asarray(mask) == 0, -1e9, scores)
    p_attn = softmax(scores, axis=-1)
    return np.matmul(p_attn, value), p_attn


def attention_backward_np(d_output, Q, K, V, mask=None):
    "Backpropagate sum(d_output * output) through Equation 1."
    d_out = np.asarray(d_output, dtype=np.float64)
    query = np.asarray(Q, dtype=np.float64)
    key = np.asarray(K, dtype=np.float64)
    value = np.asarray(V, dtype=np.float64)
    d_k = query.shape[-1]
    _, p_attn = scaled_dot_product_attention_np(query, key, value, mask)
    d_value = np.matmul(np.swapaxes(p_attn, -2, -1), d_out)
    d_p_attn = np.matmul(d_out, np.swapaxes(value, -2, -1))
    d_scores = p_attn * (d_p_attn - (d_p_attn * p_attn).sum(axis=-1, keepdims=True))
    d_scores = d_scores / math.sqrt(d_k)
    d_query = np.matmul(d_scores, key)
    d_key = np.matmul(np.swapaxes(d_scores, -2, -1), query)
    return d_query, d_key, d_value


def numerical_gradient(f, x, eps=1e-6):
    "Central differences for every element of x (x is copied, never written)."
    x = np.asarray(x, dtype=np.float64)
    grad = np.empty_like(x)
    for idx in np.ndindex(*x.shape):
        x_plus = x.copy()
        x_plus[idx] += eps
        x_minus = x.copy()
        x_minus[idx] -= eps
        grad[idx] = (f(x_plus) - f(x_minus)) / (2 * eps)
    return grad


# ----------------------------------------------------------------------------- PyTorch

def attention(query, key, value, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


def scaled_dot_product_attention(Q, K, V, mask=None):
    "The contract's name for :func:`attention`."
    return attention(Q, K, V, mask=mask)
