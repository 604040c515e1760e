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
    # one (B, n, d_head) block per head, stacked on a new head axis
    return torch.stack(torch.chunk(x, num_heads, dim=-1), dim=1)


def combine_heads(x: torch.Tensor) -> torch.Tensor:
    return torch.cat(torch.unbind(x, dim=1), dim=-1)


def _attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = torch.where(mask.bool(), scores, torch.full_like(scores, float("-inf")))
    weights = torch.nn.functional.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True) -> None:
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} % {num_heads} != 0")
        super().__init__()
        self.num_heads = num_heads
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

    def forward(self, query, key, value, mask=None):
        heads, weights = _attention(split_heads(self.W_q(query), self.num_heads),
                                    split_heads(self.W_k(key), self.num_heads),
                                    split_heads(self.W_v(value), self.num_heads), mask)
        return self.W_o(combine_heads(heads)), weights
