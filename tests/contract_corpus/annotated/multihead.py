"""Exercise 3: multi-head attention, after the Annotated Transformer's MultiHeadedAttention.

Differences forced by the contract: the four projections are the named submodules
W_q, W_k, W_v, W_o (not a ``clones(...)`` ModuleList ``self.linears``), the divisibility
check raises ValueError instead of ``assert``, the mask is already broadcastable to
(B, h, n, m) (so no ``mask.unsqueeze(1)``), there is no dropout, and the weights are returned.
"""
import copy
import math

import torch
import torch.nn as nn


def clones(module, N):
    "Produce N identical layers."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def attention(query, key, value, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


def split_heads(x, num_heads):
    "(B, n, d_model) -> (B, h, n, d_k)"
    nbatches = x.size(0)
    d_k = x.size(-1) // num_heads
    return x.view(nbatches, -1, num_heads, d_k).transpose(1, 2)


def combine_heads(x):
    "(B, h, n, d_k) -> (B, n, h * d_k): 'Concat' using a view."
    nbatches, h, _, d_k = x.size()
    return x.transpose(1, 2).contiguous().view(nbatches, -1, h * d_k)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        "Take in model size and number of heads."
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        # We assume d_v always equals d_k
        self.d_k = d_model // num_heads
        self.h = num_heads
        self.W_q, self.W_k, self.W_v, self.W_o = clones(nn.Linear(d_model, d_model, bias=bias), 4)
        self.attn = None

    def forward(self, query, key, value, mask=None):
        "Implements Figure 2"
        nbatches = query.size(0)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip((self.W_q, self.W_k, self.W_v), (query, key, value))
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=mask)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.W_o(x), self.attn
