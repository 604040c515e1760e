"""ex4 reference: causal and padding masks, causal self-attention, KV-cache decoding,
greedy generation.

Masks are boolean, True = may attend. A causal mask lets position i attend to
positions j ≤ i; a padding mask lets every query attend only to real (non-pad) keys.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

__all__ = ["create_causal_mask", "create_padding_mask", "combine_masks",
           "causal_self_attention", "attend_next", "greedy_generate"]


def create_causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(seq_len, seq_len) bool, True on and below the diagonal: [i, j] = j <= i."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def create_padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """(B, max_len) bool, True at positions < lengths[b] (the real tokens)."""
    positions = torch.arange(max_len, device=lengths.device)       # (max_len,)
    return positions[None, :] < lengths[:, None]                   # (B, max_len)


def combine_masks(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """(B, n, n) bool with [b, i, j] = causal[i, j] and padding[b, j]."""
    return causal[None, :, :] & padding[:, None, :]                 # (1,n,n) & (B,1,n)


def causal_self_attention(
    x: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, W_v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Single-head causal self-attention.

    Args:
        x: (B, n, d_model).  W_q, W_k: (d_model, d_k).  W_v: (d_model, d_v).

    Returns:
        output (B, n, d_v) and weights (B, n, n), zero above the diagonal.
    """
    Q, K, V = x @ W_q, x @ W_k, x @ W_v                             # (B, n, d_k/d_k/d_v)
    n, d_k = x.shape[-2], Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)               # (B, n, n)
    mask = create_causal_mask(n, device=x.device)                   # (n, n)
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)                         # (B, n, n)
    return weights @ V, weights                                     # (B, n, d_v)


def attend_next(
    q_t: torch.Tensor, K_cache: torch.Tensor, V_cache: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoding step: the new query attends to all t cached keys (no mask needed).

    Args:
        q_t: (B, d_k).  K_cache: (B, t, d_k).  V_cache: (B, t, d_v).

    Returns:
        output (B, d_v) and weights (B, t).
    """
    scores = (K_cache @ q_t.unsqueeze(-1)).squeeze(-1) / math.sqrt(q_t.shape[-1])  # (B, t)
    weights = torch.softmax(scores, dim=-1)                          # (B, t)
    output = (weights.unsqueeze(1) @ V_cache).squeeze(1)             # (B, d_v)
    return output, weights


def _argmax_first(logits: torch.Tensor) -> torch.Tensor:
    """Index of the largest entry along the last dim, the LOWEST index on ties. (B, V) -> (B,)"""
    vocab = logits.shape[-1]
    is_max = logits == logits.max(dim=-1, keepdim=True).values      # (B, V) bool
    index = torch.arange(vocab, device=logits.device).expand_as(logits)
    return torch.where(is_max, index, vocab).min(dim=-1).values      # (B,)


def greedy_generate(
    model: Callable[[torch.Tensor], torch.Tensor], prompt: torch.Tensor, max_new_tokens: int
) -> torch.Tensor:
    """Greedy decoding with a causal LM ``model(ids (B, t)) -> logits (B, t, vocab)``.

    Appends the argmax of the last position's logits (lowest index on ties)
    ``max_new_tokens`` times. Runs the model under ``torch.no_grad()``.

    Returns:
        (B, t + max_new_tokens) token ids, starting with ``prompt``.
    """
    ids = prompt.clone()                                             # (B, t)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids)[:, -1, :]                            # (B, vocab)
            next_id = _argmax_first(logits).to(ids.dtype)            # (B,)
            ids = torch.cat([ids, next_id[:, None]], dim=1)          # (B, t + 1)
    return ids
