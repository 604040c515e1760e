"""Exercise 4 — Causal masking and generation."""
from __future__ import annotations

import math

import torch


def create_causal_mask(seq_len: int, device=None) -> torch.Tensor:
    """(seq_len, seq_len) boolean mask, True on and below the diagonal."""
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def create_padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """(B, max_len) boolean mask, True at positions < lengths[b]."""
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)


def combine_masks(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """(B, n, n) mask with [b, i, j] = causal[i, j] and padding[b, j]."""
    return causal.unsqueeze(0) & padding.unsqueeze(1)


def causal_self_attention(x, W_q, W_k, W_v):
    """Single-head causal self-attention. Returns (output (B, n, d_v), weights (B, n, n))."""
    Q = x @ W_q
    K = x @ W_k
    V = x @ W_v
    n = x.shape[-2]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    mask = create_causal_mask(n, device=x.device)
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    output = weights @ V
    return output, weights


def attend_next(q_t, K_cache, V_cache):
    """One decoding step: q_t (B, d_k) attends to all t cached keys/values."""
    scores = (K_cache @ q_t.unsqueeze(-1)).squeeze(-1) / math.sqrt(q_t.shape[-1])   # (B, t)
    weights = torch.softmax(scores, dim=-1)
    output = (weights.unsqueeze(-2) @ V_cache).squeeze(-2)                           # (B, d_v)
    return output, weights


@torch.no_grad()
def greedy_generate(model, prompt, max_new_tokens):
    """Append the argmax of the last position's logits ``max_new_tokens`` times."""
    ids = prompt
    for _ in range(max_new_tokens):
        logits = model(ids)                                          # (B, t, vocab)
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)   # (B, 1)
        ids = torch.cat([ids, next_token], dim=1)
    return ids
