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
    B, n, d_model = x.shape
    d_head = d_model // num_heads
    heads = [x[:, :, i * d_head:(i + 1) * d_head] for i in range(num_heads)]
    return torch.stack(heads, dim=1)


def combine_heads(x):
    B, h, n, d_head = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, n, h * d_head)


class MultiHeadAttention(nn.Module):
    """Per-head loop, additive -1e9 mask, hand-written softmax."""

    def __init__(self, d_model, num_heads, bias=True):
        super(MultiHeadAttention, self).__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias)
        self.W_k = nn.Linear(d_model, d_model, bias)
        self.W_v = nn.Linear(d_model, d_model, bias)
        self.W_o = nn.Linear(d_model, d_model, bias)

    def forward(self, query, key, value, mask=None):
        Q = split_heads(self.W_q(query), self.num_heads)
        K = split_heads(self.W_k(key), self.num_heads)
        V = split_heads(self.W_v(value), self.num_heads)
        if mask is not None:
            mask = torch.broadcast_to(mask, (Q.shape[0], self.num_heads, Q.shape[2], K.shape[2]))
        outs, ws = [], []
        for i in range(self.num_heads):
            s = Q[:, i] @ K[:, i].transpose(1, 2) / math.sqrt(self.d_k)     # (B, n, m)
            if mask is not None:
                s = s + (~mask[:, i]).to(s.dtype) * -1e9
            e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
            w = e / e.sum(dim=-1, keepdim=True)
            ws.append(w)
            outs.append(w @ V[:, i])
        weights = torch.stack(ws, dim=1)
        heads = torch.stack(outs, dim=1)
        return self.W_o(combine_heads(heads)), weights
