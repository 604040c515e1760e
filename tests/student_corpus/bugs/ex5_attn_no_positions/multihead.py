"""Exercise 3 — multi-head attention; the attention core runs in float64."""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, num_heads, d_model // num_heads).permute(0, 2, 1, 3)


def combine_heads(x):
    B, h, n, d_head = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, n, h * d_head)


def _attention64(q, k, v, mask):
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return torch.matmul(w, v).to(dtype), w.to(dtype)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"{num_heads} heads do not divide d_model={d_model}")
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        h = self.num_heads
        ctx, weights = _attention64(split_heads(self.W_q(query), h),
                                    split_heads(self.W_k(key), h),
                                    split_heads(self.W_v(value), h), mask)
        return self.W_o(combine_heads(ctx)), weights
