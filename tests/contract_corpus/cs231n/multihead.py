"""Exercise 3: multi-head attention, written like the MultiHeadAttention layer of the
CS231n transformer assignment (``transformer_layers.py``): N/S/T/E/H shape names, heads
split with ``view(N, S, H, E // H)`` and moved forward with ``permute``, scores divided by
``math.sqrt(E / H)``, ``masked_fill(attn_mask == 0, -math.inf)``."""
import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    """
    Inputs:
    - x: Tensor of shape (N, S, E)
    Returns:
    - Tensor of shape (N, H, S, E/H)
    """
    N, S, E = x.shape
    H = num_heads
    return x.view(N, S, H, E // H).permute(0, 2, 1, 3)


def combine_heads(x):
    """
    Inputs:
    - x: Tensor of shape (N, H, S, E/H)
    Returns:
    - Tensor of shape (N, S, E)
    """
    N, H, S, D = x.shape
    return x.permute(0, 2, 1, 3).reshape(N, S, H * D)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        """
        Inputs:
        - d_model: Dimension of the token embedding (E)
        - num_heads: Number of attention heads (H)
        - bias: whether the four projections have a bias
        """
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.n_head = num_heads
        self.emd_dim = d_model
        self.head_dim = d_model // num_heads

    def forward(self, query, key, value, mask=None):
        """
        Inputs:
        - query: Input data to be used as the query, of shape (N, S, E)
        - key: Input data to be used as the key, of shape (N, T, E)
        - value: Input data to be used as the value, of shape (N, T, E)
        - mask: Boolean, broadcastable to (N, H, S, T); mask[..., i, j] == False means
          query i may not attend to key j

        Returns:
        - output: Tensor of shape (N, S, E)
        - attn: Tensor of shape (N, H, S, T)
        """
        H = self.n_head
        Q = split_heads(self.W_q(query), H)   # (N, H, S, E/H)
        K = split_heads(self.W_k(key), H)     # (N, H, T, E/H)
        V = split_heads(self.W_v(value), H)   # (N, H, T, E/H)

        dot_product = torch.matmul(Q, K.transpose(2, 3)) / math.sqrt(self.emd_dim / H)
        if mask is not None:
            dot_product = dot_product.masked_fill(mask == 0, -math.inf)
        attn = torch.softmax(dot_product, dim=-1)   # (N, H, S, T)
        Y = torch.matmul(attn, V)                    # (N, H, S, E/H)
        output = self.W_o(combine_heads(Y))
        return output, attn
