"""Exercise 4 — causal masking and generation (loop flavour)."""
from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch


def create_causal_mask(seq_len, device=None):
    mask = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(seq_len):
        mask[i, : i + 1] = True
    return mask


def create_padding_mask(lengths, max_len):
    B = lengths.shape[0]
    mask = torch.zeros(B, max_len, dtype=torch.bool, device=lengths.device)
    for b in range(B):
        mask[b, : int(lengths[b])] = True
    return mask


def combine_masks(causal, padding):
    rows = []
    for b in range(padding.shape[0]):
        rows.append(causal & padding[b].unsqueeze(0))
    return torch.stack(rows, dim=0)


def causal_self_attention(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    n = x.shape[1]
    scores = Q @ K.transpose(1, 2) / math.sqrt(W_q.shape[1])
    mask = create_causal_mask(n, device=x.device)
    scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def attend_next(q_t, K_cache, V_cache):
    scores = (K_cache @ q_t.unsqueeze(-1)).squeeze(-1) / math.sqrt(q_t.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    output = (weights.unsqueeze(1) @ V_cache).squeeze(1)
    return output, weights


def greedy_generate(model, prompt, max_new_tokens):
    tokens = [prompt.clone()]
    current = prompt.clone()
    with torch.no_grad():
        step = 0
        while step < max_new_tokens:
            logits = model(current)
            last = logits[:, current.shape[1] - 1, :]
            best = torch.argmax(last, dim=-1).to(prompt.dtype)
            current = torch.cat([current, best[:, None]], dim=1)
            step += 1
    return current
