"""Exercise 1: scaled dot-product attention (plain PyTorch-tutorial style)."""
import math

import numpy as np
import torch


def softmax(x, axis=-1):
    """Softmax along ``axis``; subtracting the maximum keeps ``exp`` from overflowing."""
    x = np.asarray(x, dtype=np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / exps.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    output = np.matmul(weights, V)
    return output, weights


def attention_backward_np(d_output, Q, K, V, mask=None):
    d_output = np.asarray(d_output, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    d_k = Q.shape[-1]
    _, weights = scaled_dot_product_attention_np(Q, K, V, mask)

    dV = np.matmul(np.swapaxes(weights, -1, -2), d_output)
    d_weights = np.matmul(d_output, np.swapaxes(V, -1, -2))
    # Jacobian-vector product of the row-wise softmax
    d_scores = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
    d_scores = d_scores / np.sqrt(d_k)
    dQ = np.matmul(d_scores, K)
    dK = np.matmul(np.swapaxes(d_scores, -1, -2), Q)
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros(x.size)
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad.reshape(x.shape)


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    output = torch.matmul(weights, V)
    return output, weights
