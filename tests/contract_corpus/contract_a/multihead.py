"""Exercise 3 — Multi-head attention."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, n, d_model) -> (B, h, n, d_model // h); head i holds features i*d_head ... (i+1)*d_head - 1."""
    B, n, d_model = x.shape
    d_head = d_model // num_heads
    return x.reshape(B, n, num_heads, d_head).transpose(1, 2)


def combine_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of split_heads: (B, h, n, d_head) -> (B, n, h * d_head)."""
    B, h, n, d_head = x.shape
    return x.transpose(1, 2).reshape(B, n, h * d_head)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads

        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.num_heads)   # (B, h, n, d_head)
        k = split_heads(self.W_k(key), self.num_heads)     # (B, h, m, d_head)
        v = split_heads(self.W_v(value), self.num_heads)   # (B, h, m, d_head)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)   # (B, h, n, m)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)

        output = self.W_o(combine_heads(weights @ v))       # (B, n, d_model)
        return output, weights
