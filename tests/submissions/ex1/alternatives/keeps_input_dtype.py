"""NumPy in the input's own float type (float32 stays float32), additive masks, and a
gradient checker that builds the two perturbed points explicitly."""
import numpy as np
import torch
import torch.nn.functional as F


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = x - np.amax(x, axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / exps.sum(axis=axis, keepdims=True)


def _additive(mask, dtype):
    return np.where(np.asarray(mask, dtype=bool), 0.0, -np.inf).astype(dtype)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(np.float64(Q.shape[-1])).astype(Q.dtype)
    if mask is not None:
        scores = scores + _additive(mask, scores.dtype)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


def attention_backward_np(d_output, Q, K, V, mask=None):
    scale = 1.0 / np.sqrt(Q.shape[-1])
    _, weights = scaled_dot_product_attention_np(Q, K, V, mask)
    d_weights = np.matmul(d_output, np.swapaxes(V, -2, -1))
    dot = (d_weights * weights).sum(axis=-1, keepdims=True)
    d_scores = weights * d_weights - weights * dot
    dQ = scale * np.matmul(d_scores, K)
    dK = scale * np.matmul(np.swapaxes(d_scores, -2, -1), Q)
    dV = np.matmul(np.swapaxes(weights, -2, -1), d_output)
    return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
    grad = np.zeros(np.shape(x), dtype=np.float64)
    for index in np.ndindex(*np.shape(x)):
        x_plus = np.array(x, dtype=np.float64)
        x_minus = np.array(x, dtype=np.float64)
        x_plus[index] += eps
        x_minus[index] -= eps
        grad[index] = (f(x_plus) - f(x_minus)) / (2 * eps)
    return grad


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.mT * Q.shape[-1] ** -0.5
    if mask is not None:
        bias = torch.zeros_like(scores).masked_fill(~mask, float("-inf"))
        scores = scores + bias
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights
