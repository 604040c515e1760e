"""Exercise 1: scaled dot-product attention, CS231n style for the NumPy parts.

* ``softmax``: shift by ``np.max(x, axis=..., keepdims=True)``, exponentiate, normalise
  through ``log(Z)`` as in ``softmax_loss``.
* forward / backward: an ``attention_forward`` that returns ``(out, cache)`` and an
  ``attention_backward(dout, cache)`` that undoes it stage by stage (``dprobs``,
  ``dscores``, ``dQ``, ``dK``, ``dV``), as in the assignments' ``layers.py``.
* ``numerical_gradient``: ``eval_numerical_gradient`` with ``np.nditer(x, flags=['multi_index'],
  op_flags=['readwrite'])``: save ``oldval``, evaluate at ``oldval + h`` and ``oldval - h``,
  restore ``x[ix] = oldval``.
"""
import math

import numpy as np
import torch


# ----------------------------------------------------------------------------- NumPy

def softmax(x, axis=-1):
    """
    Numerically stable softmax of x along axis.

    Inputs:
    - x: Array of scores, any shape.
    - axis: the axis that sums to one.

    Returns an array of probabilities of the same shape as x.
    """
    shifted_logits = x - np.max(x, axis=axis, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=axis, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    probs = np.exp(log_probs)
    return probs


def attention_forward(Q, K, V, mask=None):
    """
    Forward pass for scaled dot-product attention.

    Inputs:
    - Q: Queries, of shape (..., n, d_k)
    - K: Keys, of shape (..., m, d_k)
    - V: Values, of shape (..., m, d_v)
    - mask: Boolean array broadcastable to (..., n, m); True means "may attend"

    Returns a tuple of:
    - out: Output, of shape (..., n, d_v)
    - cache: (Q, K, V, probs, scale)
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    scale = 1.0 / np.sqrt(Q.shape[-1])
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    probs = softmax(scores, axis=-1)
    out = np.matmul(probs, V)
    cache = (Q, K, V, probs, scale)
    return out, cache


def attention_backward(dout, cache):
    """
    Backward pass for scaled dot-product attention.

    Inputs:
    - dout: Upstream derivatives, of shape (..., n, d_v)
    - cache: Tuple from attention_forward

    Returns a tuple of:
    - dQ, dK, dV: Gradients with respect to Q, K and V
    """
    Q, K, V, probs, scale = cache
    dout = np.asarray(dout, dtype=np.float64)
    # out = probs @ V
    dV = np.matmul(np.swapaxes(probs, -1, -2), dout)
    dprobs = np.matmul(dout, np.swapaxes(V, -1, -2))
    # probs = softmax(scores) along the last axis (masked entries have probs == 0)
    dscores = probs * (dprobs - np.sum(dprobs * probs, axis=-1, keepdims=True))
    # scores = (Q @ K^T) * scale
    dscores *= scale
    dQ = np.matmul(dscores, K)
    dK = np.matmul(np.swapaxes(dscores, -1, -2), Q)
    return dQ, dK, dV


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    out, cache = attention_forward(Q, K, V, mask)
    probs = cache[3]
    return out, probs


def attention_backward_np(d_output, Q, K, V, mask=None):
    _, cache = attention_forward(Q, K, V, mask)
    return attention_backward(d_output, cache)


def numerical_gradient(f, x, eps=1e-6):
    """
    A naive implementation of numerical gradient of f at x
    - f should be a function that takes a single argument
    - x is the point (numpy array) to evaluate the gradient at
    """
    h = eps
    fx = f(x)  # evaluate function value at original point
    grad = np.zeros_like(x)
    # iterate over all indexes in x
    it = np.nditer(x, flags=['multi_index'], op_flags=['readwrite'])
    while not it.finished:
        # evaluate function at x+h
        ix = it.multi_index
        oldval = x[ix]
        x[ix] = oldval + h  # increment by h
        fxph = f(x)  # evaluate f(x + h)
        x[ix] = oldval - h
        fxmh = f(x)  # evaluate f(x - h)
        x[ix] = oldval  # restore

        # compute the partial derivative with centered formula
        grad[ix] = (fxph - fxmh) / (2 * h)  # the slope
        it.iternext()  # step to next dimension

    return grad


# ----------------------------------------------------------------------------- PyTorch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    scores = torch.matmul(Q, K.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, V)
    return out, probs
