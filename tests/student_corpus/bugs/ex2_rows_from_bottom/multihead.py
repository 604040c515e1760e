"""Exercise 3 — multi-head attention (heads built with a loop and torch.cat/stack)."""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    d_head = x.shape[-1] // num_heads
    heads = []
    for i in range(num_heads):
        heads.append(x[:, :, i * d_head:(i + 1) * d_head])
    return torch.stack(heads, dim=1)


def combine_heads(x):
    heads = []
    for i in range(x.shape[1]):
        heads.append(x[:, i])
    return torch.cat(heads, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
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
        B, h, n, _ = q.shape
        m = k.shape[2]
        if mask is not None:
            mask = mask.expand(B, h, n, m) if mask.dim() == 4 else torch.broadcast_to(mask, (B, h, n, m))
        all_w, all_out = [], []
        for i in range(h):
            s = q[:, i] @ k[:, i].transpose(1, 2) / math.sqrt(self.d_head)
            if mask is not None:
                s = s.masked_fill(~mask[:, i], float("-inf"))
            w = torch.softmax(s, dim=-1)
            all_w.append(w)
            all_out.append(w @ v[:, i])
        weights = torch.stack(all_w, dim=1)
        heads = torch.stack(all_out, dim=1)
        return self.W_o(combine_heads(heads)), weights
