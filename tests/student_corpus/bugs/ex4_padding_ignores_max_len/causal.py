"""Exercise 4 — Causal masking and generation (student solution)."""
from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch


def create_causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def create_padding_mask(lengths, max_len):
    positions = torch.arange(int(lengths.max()), device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)


def combine_masks(causal, padding):
    return causal.unsqueeze(0) & padding.unsqueeze(1)


def causal_self_attention(x, W_q, W_k, W_v):
    Q = x @ W_q
    K = x @ W_k
    V = x @ W_v
    n = x.shape[1]
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    mask = create_causal_mask(n, device=x.device)
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def attend_next(q_t, K_cache, V_cache):
    d_k = q_t.shape[-1]
    scores = torch.einsum("bd,btd->bt", q_t, K_cache) / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=-1)
    output = torch.einsum("bt,btd->bd", weights, V_cache)
    return output, weights


def greedy_generate(model, prompt, max_new_tokens):
    seq = prompt.clone()
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(seq)
            next_tok = torch.argmax(logits[:, -1, :], dim=-1)
            seq = torch.cat([seq, next_tok.to(seq.dtype).unsqueeze(1)], dim=1)
    return seq
