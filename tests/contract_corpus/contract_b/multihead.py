"""ex3: multi-head attention (unflatten/flatten for the heads, einsum for the scores)."""
import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    return x.unflatten(-1, (num_heads, x.shape[-1] // num_heads)).permute(0, 2, 1, 3)


def combine_heads(x):
    return x.permute(0, 2, 1, 3).flatten(start_dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.num_heads)
        k = split_heads(self.W_k(key), self.num_heads)
        v = split_heads(self.W_v(value), self.num_heads)
        scores = torch.einsum("bhnd,bhmd->bhnm", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = torch.where(mask, scores, torch.full((), -1e9, dtype=scores.dtype, device=scores.device))
        weights = scores.softmax(dim=-1)
        heads = torch.einsum("bhnm,bhmd->bhnd", weights, v)
        return self.W_o(combine_heads(heads)), weights
