# ex1 · Scaled dot-product attention — student file `attention.py`.
# Replace every `raise NotImplementedError(...)` with your code; keep the names
# and signatures. Rules and how to check your work: README.md in this folder.
"""Exercise 1 — Scaled dot-product attention.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V,        d_k = Q.shape[-1]

You will write attention twice: once in NumPy (forward pass, a hand-derived backward
pass, and a finite-difference gradient checker to test it) and once in PyTorch.

Conventions used throughout (they are also what the grader checks):

* Shapes: ``Q (..., n, d_k)``, ``K (..., m, d_k)``, ``V (..., m, d_v)``. ``...`` is any
  number (zero or more) of leading dimensions shared by Q, K and V (e.g. a batch
  dimension, or batch and heads). ``n`` (queries) and ``m`` (keys) may differ, and so
  may ``d_k`` and ``d_v``.
* Masks are **boolean** and ``True`` means "query i may attend to key j" (the
  convention of ``torch.nn.functional.scaled_dot_product_attention``). A mask is
  broadcastable to the scores' shape ``(..., n, m)``, e.g. ``(n, m)`` or
  ``(B, 1, m)``. Every query row has at least one allowed key. Fill masked scores
  with ``-inf`` or with a large negative number such as ``-1e9`` — both are accepted.
* Never modify an input in place (no ``x -= ...`` on an argument).
* The NumPy functions must not use ``torch`` or ``scipy``, not even to check a type
  (``isinstance(x, torch.Tensor)`` is a use; a type annotation that names one is not);
  they may compute in and return float64 whatever the input's float type.
* The PyTorch function must keep the input's dtype (float32 and float64 are both
  tested) and device, and stay differentiable: no ``.detach()``, ``.numpy()`` or
  ``.item()`` on the computation path.
* The device rule is checked by running the PyTorch function on tensors of PyTorch's
  ``meta`` device (shapes and dtypes, no values; the grader's stand-in for a GPU): use
  torch operations only on the computation path (no ``.item()``, ``.tolist()``,
  ``bool(tensor)``), create any new tensor on the input's device
  (``device=Q.device``) and give fill values as Python floats
  (``masked_fill(~mask, float("-inf"))``).
* Not allowed anywhere in this file: ``torch.nn.functional.scaled_dot_product_attention``
  and ``torch.nn.MultiheadAttention``.
* This file must be self-contained: import only the standard library, ``numpy``,
  ``torch`` and ``matplotlib``.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
import torch


# ----------------------------------------------------------------------------- NumPy

def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax of ``x`` along ``axis``.

    Args:
        x: array of any shape and float dtype. Entries may be ``-inf`` (a masked
            score; it gets probability 0) as long as every slice along ``axis`` has at
            least one finite entry. Finite entries may be as large as ``±1e4`` in
            magnitude: the result must contain no overflow, ``inf`` or ``NaN``.
        axis: the axis to normalise over (negative values count from the end).

    Returns:
        A new float array (float64 is fine) of the same shape as ``x``, non-negative,
        summing to 1 along ``axis``. ``x`` itself is not modified.

    Hint: softmax is unchanged by subtracting a constant from every entry of a slice.
    """
    raise NotImplementedError("softmax: not implemented yet")


def scaled_dot_product_attention_np(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention in NumPy: ``softmax(Q Kᵀ / √d_k) V``.

    Args:
        Q: queries, shape ``(..., n, d_k)``.
        K: keys, shape ``(..., m, d_k)``.
        V: values, shape ``(..., m, d_v)``. The leading ``...`` dims (zero or more)
            are the same for Q, K and V.
        mask: optional boolean array broadcastable to ``(..., n, m)``; ``True`` where
            query i may attend to key j. Masked positions get weight exactly 0 (fill
            their scores with ``-inf`` or ``-1e9`` before the softmax). ``None`` means
            every query attends to every key.

    Returns:
        ``(output, weights)``:
        ``output`` of shape ``(..., n, d_v)`` and ``weights`` of shape ``(..., n, m)``
        (each row of ``weights`` sums to 1). float64 is fine for both.

    NumPy only (no torch, no scipy). Inputs are not modified.
    """
    raise NotImplementedError("scaled_dot_product_attention_np: not implemented yet")


def attention_backward_np(
    d_output: np.ndarray,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward pass of :func:`scaled_dot_product_attention_np`, derived by hand.

    With ``output, _ = scaled_dot_product_attention_np(Q, K, V, mask)``, return the
    gradients of the scalar ``L = sum(d_output * output)`` with respect to Q, K and V.

    Args:
        d_output: upstream gradient ``∂L/∂output``, shape ``(..., n, d_v)``.
        Q, K, V, mask: exactly as in :func:`scaled_dot_product_attention_np`. The mask
            is treated as a constant (masked keys receive no gradient through the
            masked scores).

    Returns:
        ``(dQ, dK, dV)`` with the same shapes as ``Q``, ``K`` and ``V`` (float64 is
        fine).

    NumPy only (no torch autograd, no scipy). Inputs are not modified.
    Check your answer against :func:`numerical_gradient`.
    """
    raise NotImplementedError("attention_backward_np: not implemented yet")


def numerical_gradient(
    f: Callable[[np.ndarray], float],
    x: np.ndarray,
    eps: float = 1e-6,
) -> np.ndarray:
    """Gradient of the scalar function ``f`` at ``x`` by central differences.

    For every element ``i`` of ``x`` (any shape):
    ``grad[i] = (f(x + eps·e_i) − f(x − eps·e_i)) / (2·eps)``,
    where ``e_i`` is the array that is 1 at position ``i`` and 0 elsewhere.

    Args:
        f: a function of one array of ``x``'s shape that returns a Python float.
        x: float64 array, any shape (including 0-d).
        eps: step size.

    Returns:
        A float64 array of the same shape as ``x``.

    ``x`` must be unchanged when the function returns (if you perturb it in place,
    restore every element). NumPy only.
    """
    raise NotImplementedError("numerical_gradient: not implemented yet")


# ----------------------------------------------------------------------------- PyTorch

def scaled_dot_product_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    mask: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention in PyTorch: ``softmax(Q Kᵀ / √d_k) V``.

    Same shapes and semantics as :func:`scaled_dot_product_attention_np`:

    Args:
        Q: ``(..., n, d_k)`` floating tensor.
        K: ``(..., m, d_k)``, same dtype and device as Q.
        V: ``(..., m, d_v)``, same dtype and device as Q.
        mask: optional ``torch.bool`` tensor broadcastable to ``(..., n, m)``;
            ``True`` where query i may attend to key j. Masked positions get weight
            exactly 0 (fill their scores with ``-inf`` or a large negative number).

    Returns:
        ``(output, weights)``: ``output (..., n, d_v)`` and ``weights (..., n, m)``,
        both with Q's dtype and device, and differentiable with respect to Q, K and V.

    Not allowed: ``torch.nn.functional.scaled_dot_product_attention``,
    ``torch.nn.MultiheadAttention``, and ``.detach()``/``.numpy()``/``.item()`` on the
    computation path. Inputs are not modified in place.
    """
    raise NotImplementedError("scaled_dot_product_attention: not implemented yet")
