"""ex3 reference: multi-head attention.

Notation: B batch, n query positions, m key positions, h heads,
d_model = h · d_head. Head i owns features i·d_head … (i+1)·d_head − 1.
Masks are boolean, True = may attend, broadcastable to (B, h, n, m).
"""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["split_heads", "combine_heads", "MultiHeadAttention"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, n, d_model) -> (B, h, n, d_head), head i holding features i·d_head … (i+1)·d_head − 1."""
    B, n, d_model = x.shape
    if d_model % num_heads != 0:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
    d_head = d_model // num_heads
    return x.reshape(B, n, num_heads, d_head).transpose(1, 2)    # (B, h, n, d_head)


def combine_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, n, d_head) -> (B, n, h·d_head); the inverse of :func:`split_heads`."""
    B, h, n, d_head = x.shape
    return x.transpose(1, 2).reshape(B, n, h * d_head)           # (B, n, d_model)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ / √d_head) v per head. q (B,h,n,d), k/v (B,h,m,d) -> (B,h,n,d), (B,h,n,m)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])    # (B, h, n, m)
    if mask is not None:
        mask = torch.as_tensor(mask, dtype=torch.bool, device=scores.device)
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)                      # (B, h, n, m)
    return weights @ v, weights                                  # (B, h, n, d_head)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query/key/value/output projections.

    Submodules (and the only parameters): ``W_q``, ``W_k``, ``W_v``, ``W_o``, each
    ``nn.Linear(d_model, d_model, bias=bias)``.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True) -> None:
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

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query (B, n, d_model), key/value (B, m, d_model), mask broadcastable to (B, h, n, m).

        Returns output (B, n, d_model) = W_o(combine_heads(attention)) and the
        per-head weights (B, h, n, m).
        """
        q = split_heads(self.W_q(query), self.num_heads)         # (B, h, n, d_head)
        k = split_heads(self.W_k(key), self.num_heads)           # (B, h, m, d_head)
        v = split_heads(self.W_v(value), self.num_heads)         # (B, h, m, d_head)
        heads, weights = _attention(q, k, v, mask)               # (B, h, n, d_head), (B, h, n, m)
        return self.W_o(combine_heads(heads)), weights           # (B, n, d_model)
