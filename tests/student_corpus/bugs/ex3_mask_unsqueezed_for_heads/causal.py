"""Exercise 4 — causal masking; attention computed in float64 and cast back."""
from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch


def create_causal_mask(seq_len, device=None):
    return torch.ones((seq_len, seq_len), dtype=torch.bool, device=device).tril(diagonal=0)


def create_padding_mask(lengths, max_len):
    cols = torch.arange(max_len, device=lengths.device).expand(lengths.shape[0], max_len)
    return cols < lengths.reshape(-1, 1)


def combine_masks(causal, padding):
    B, n = padding.shape
    return causal.reshape(1, n, n).expand(B, n, n) & padding.reshape(B, 1, n).expand(B, n, n)


def causal_self_attention(x, W_q, W_k, W_v):
    dtype = x.dtype
    x64 = x.double()
    Q, K, V = x64 @ W_q.double(), x64 @ W_k.double(), x64 @ W_v.double()
    S = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    S = S.masked_fill(~create_causal_mask(x.shape[-2], device=x.device), float("-inf"))
    P = torch.softmax(S, dim=-1)
    return (P @ V).to(dtype), P.to(dtype)


def attend_next(q_t, K_cache, V_cache):
    dtype = q_t.dtype
    q, K, V = q_t.double(), K_cache.double(), V_cache.double()
    s = (K * q.unsqueeze(1)).sum(-1) / math.sqrt(q.shape[-1])
    w = torch.softmax(s, dim=-1)
    out = (w.unsqueeze(-1) * V).sum(1)
    return out.to(dtype), w.to(dtype)


def greedy_generate(model, prompt, max_new_tokens):
    B, t = prompt.shape
    out = torch.empty((B, t + max_new_tokens), dtype=prompt.dtype, device=prompt.device)
    out[:, :t] = prompt
    with torch.no_grad():
        for step in range(max_new_tokens):
            cur = t + step
            logits = model(out[:, :cur].contiguous())
            out[:, cur] = logits[:, -1, :].argmax(dim=-1).to(prompt.dtype)
    return out
