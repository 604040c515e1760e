"""Exercise 3: multi-head attention, in the style of nanoGPT's CausalSelfAttention
(without its fused c_attn: the contract asks for separate W_q, W_k, W_v, W_o)."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


def split_heads(x, num_heads):
    """(B, n, d_model) -> (B, h, n, d_model // h)."""
    B, T, C = x.size()
    return x.view(B, T, num_heads, C // num_heads).transpose(1, 2)  # (B, nh, T, hs)


def combine_heads(x):
    """(B, h, n, d_head) -> (B, n, h * d_head): re-assemble all head outputs side by side."""
    B, nh, T, hs = x.size()
    return x.transpose(1, 2).contiguous().view(B, T, nh * hs)


class MultiHeadAttention(nn.Module):

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        # query, key, value and output projections
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.n_head = num_heads
        self.n_embd = d_model

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.n_head)  # (B, nh, T, hs)
        k = split_heads(self.W_k(key), self.n_head)    # (B, nh, S, hs)
        v = split_heads(self.W_v(value), self.n_head)  # (B, nh, S, hs)

        # (B, nh, T, hs) x (B, nh, hs, S) -> (B, nh, T, S)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if mask is not None:
            att = att.masked_fill(mask == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, S) x (B, nh, S, hs) -> (B, nh, T, hs)
        y = combine_heads(y)

        # output projection
        y = self.W_o(y)
        return y, att
