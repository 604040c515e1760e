"""Exercise 3 — multi-head attention with einsum."""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    b, n, d = x.shape
    return torch.einsum("bnhd->bhnd", x.reshape(b, n, num_heads, d // num_heads))


def combine_heads(x):
    b, h, n, d = x.shape
    return torch.einsum("bhnd->bnhd", x).reshape(b, n, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if num_heads <= 0 or d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.h)
        k = split_heads(self.W_k(key), self.h)
        v = split_heads(self.W_v(value), self.h)
        scores = torch.einsum("bhnd,bhmd->bhnm", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        weights = scores.softmax(dim=-1)
        ctx = torch.einsum("bhnm,bhmd->bhnd", weights, v)
        return self.W_o(combine_heads(ctx)), weights
