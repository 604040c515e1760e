"""Exercise 3 — Multi-head attention.

Instead of one attention over ``d_model``-dimensional vectors, multi-head attention
projects queries, keys and values, cuts the features into ``h`` heads of
``d_head = d_model // h`` features each, runs scaled dot-product attention in every
head in parallel, and glues the heads back together before a final projection:

    q, k, v = split_heads(W_q(query)), split_heads(W_k(key)), split_heads(W_v(value))
    output  = W_o(combine_heads(softmax(q kᵀ / √d_head) v))

Conventions used throughout (they are also what the grader checks):

* Shapes: ``B`` batch, ``n`` queries, ``m`` keys (``n`` and ``m`` may differ), ``h``
  heads, ``d_head = d_model // h``.
* Masks are **boolean** and ``True`` means "may attend". A mask is broadcastable to
  the scores' shape ``(B, h, n, m)``: e.g. ``(n, m)``, ``(B, 1, 1, m)`` or
  ``(B, 1, n, m)``. Every query row has at least one allowed key. Fill masked scores
  with ``-inf`` or a large negative number such as ``-1e9`` — both are accepted.
* Keep the input's dtype and device, stay differentiable (no ``.detach()``,
  ``.numpy()`` or ``.item()`` on the computation path), and never modify inputs in
  place.
* The device rule is checked by running ``split_heads``, ``combine_heads`` and the
  module (moved with ``.to("meta")``) on tensors of PyTorch's ``meta`` device (shapes
  and dtypes, no values; the grader's stand-in for a GPU): use torch operations only
  on the computation path (no ``.item()``, ``.tolist()``, ``bool(tensor)``), create
  any new tensor on the input's device (``device=x.device``) and give fill values as
  Python floats (``masked_fill(~mask, float("-inf"))``).
* Not allowed: ``torch.nn.MultiheadAttention``,
  ``torch.nn.functional.multi_head_attention_forward`` and
  ``torch.nn.functional.scaled_dot_product_attention``.
* No dropout. This file must be self-contained: import only the standard library,
  ``numpy``, ``torch`` and ``matplotlib`` (write the attention itself here).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Split the feature dimension into heads.

    Args:
        x: ``(B, n, d_model)`` tensor, with ``d_model`` divisible by ``num_heads``.
        num_heads: ``h``.

    Returns:
        ``(B, h, n, d_head)`` with ``d_head = d_model // h``, where head ``i`` holds
        features ``i·d_head … (i+1)·d_head − 1`` of ``x``:
        ``out[b, i, t, :] == x[b, t, i*d_head:(i+1)*d_head]``.
        Same dtype and device as ``x``; differentiable; ``x`` is not modified.
    """
    ### BEGIN SOLUTION
    B, n, d_model = x.shape
    d_head = d_model // num_heads
    x = x.reshape(B, n, num_heads, d_head)                      # (B, n, h, d_head)
    return x.transpose(1, 2)                                    # (B, h, n, d_head)
    ### END SOLUTION


def combine_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`split_heads`: concatenate the heads' features.

    Args:
        x: ``(B, h, n, d_head)`` tensor.

    Returns:
        ``(B, n, h·d_head)`` with ``out[b, t, i*d_head:(i+1)*d_head] == x[b, i, t]``,
        so that ``combine_heads(split_heads(y, h))`` equals ``y``. Same dtype and
        device as ``x``; differentiable; ``x`` is not modified.
    """
    ### BEGIN SOLUTION
    B, h, n, d_head = x.shape
    x = x.transpose(1, 2)                                       # (B, n, h, d_head)
    # transpose only changes strides; make the memory contiguous before .view
    return x.contiguous().view(B, n, h * d_head)                # (B, n, h*d_head)
    ### END SOLUTION


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections ``W_q, W_k, W_v, W_o``.

    Attributes (submodules), exactly these and no other parameters:
        W_q, W_k, W_v, W_o: each ``nn.Linear(d_model, d_model, bias=bias)``.

    No dropout. The grader loads weights with ``load_state_dict``, so the submodule
    names must be exactly ``W_q``, ``W_k``, ``W_v`` and ``W_o``. Buffers of your own
    (``register_buffer``, e.g. a constant) are not parameters: the grader keeps them.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True) -> None:
        """Create the four projections.

        Args:
            d_model: model (feature) dimension of queries, keys and values.
            num_heads: number of heads ``h``.
            bias: whether the four linear layers have a bias.

        Raises:
            ValueError: when ``d_model`` is not divisible by ``num_heads``.
        """
        super().__init__()
        ### BEGIN SOLUTION
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        ### END SOLUTION

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Multi-head attention of ``query`` over ``key``/``value``.

        Args:
            query: ``(B, n, d_model)``.
            key: ``(B, m, d_model)``.
            value: ``(B, m, d_model)``.
            mask: optional ``torch.bool`` tensor broadcastable to ``(B, h, n, m)``;
                ``True`` where query i may attend to key j (the same mask for every
                head unless it has a head dimension). A per-batch ``(B, n, m)`` mask
                must be passed as ``(B, 1, n, m)``.

        Returns:
            ``(output, weights)``:
            ``output (B, n, d_model) = W_o(combine_heads(softmax(q kᵀ / √d_head) v))``
            where ``q, k, v`` are ``split_heads`` of ``W_q(query)``, ``W_k(key)``,
            ``W_v(value)``; ``weights (B, h, n, m)`` are the per-head softmax weights
            (each row sums to 1, masked entries are 0). Both have the parameters'
            dtype (the grader calls ``.double()`` on the module for float64 tests) and
            are differentiable.
        """
        ### BEGIN SOLUTION
        h = self.num_heads
        q = split_heads(self.W_q(query), h)                     # (B, h, n, d_head)
        k = split_heads(self.W_k(key), h)                       # (B, h, m, d_head)
        v = split_heads(self.W_v(value), h)                     # (B, h, m, d_head)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)   # (B, h, n, m)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)                 # (B, h, n, m)

        heads = weights @ v                                     # (B, h, n, d_head)
        output = self.W_o(combine_heads(heads))                 # (B, n, d_model)
        return output, weights
        ### END SOLUTION
