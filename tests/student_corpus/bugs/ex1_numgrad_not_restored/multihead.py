"""Exercise 3 — Multi-head attention (student solution)."""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, n, d_model = x.shape
    d_head = d_model // num_heads
    return x.reshape(B, n, num_heads, d_head).transpose(1, 2)


def combine_heads(x):
    B, h, n, d_head = x.shape
    return x.transpose(1, 2).reshape(B, n, h * d_head)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.num_heads)
        k = split_heads(self.W_k(key), self.num_heads)
        v = split_heads(self.W_v(value), self.num_heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = self.W_o(combine_heads(weights @ v))
        return out, weights
