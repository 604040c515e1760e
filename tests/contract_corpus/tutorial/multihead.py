"""Exercise 3: multi-head attention (plain PyTorch-tutorial style)."""
import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    batch_size, seq_length, d_model = x.size()
    d_head = d_model // num_heads
    return x.view(batch_size, seq_length, num_heads, d_head).transpose(1, 2)


def combine_heads(x):
    batch_size, num_heads, seq_length, d_head = x.size()
    return x.transpose(1, 2).contiguous().view(batch_size, seq_length, num_heads * d_head)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super(MultiHeadAttention, self).__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads

        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def scaled_dot_product_attention(self, Q, K, V, mask=None):
        attn_scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_head)
        if mask is not None:
            attn_scores = attn_scores.masked_fill(mask.logical_not(), float("-inf"))
        attn_probs = torch.softmax(attn_scores, dim=-1)
        output = torch.matmul(attn_probs, V)
        return output, attn_probs

    def forward(self, query, key, value, mask=None):
        Q = split_heads(self.W_q(query), self.num_heads)
        K = split_heads(self.W_k(key), self.num_heads)
        V = split_heads(self.W_v(value), self.num_heads)

        attn_output, attn_probs = self.scaled_dot_product_attention(Q, K, V, mask)
        output = self.W_o(combine_heads(attn_output))
        return output, attn_probs
