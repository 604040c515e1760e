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


def split_heads(x, num_heads):
    B, n, d = x.shape
    return x.view(B, n, num_heads, d // num_heads).permute(0, 2, 1, 3)


def combine_heads(x):
    B, h, n, d = x.shape
    return torch.einsum("bhnd->bnhd", x).reshape(B, n, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.h)
        k = split_heads(self.W_k(key), self.h)
        v = split_heads(self.W_v(value), self.h)
        scores = torch.einsum("bhnd,bhmd->bhnm", q, k) / q.size(-1) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        weights = scores.softmax(dim=-1)
        out = torch.einsum("bhnm,bhmd->bhnd", weights, v)
        return self.W_o(combine_heads(out)), weights
