"""ex4: causal masking and greedy generation (index comparisons, einsum, -1e9, an
explicit loop filling a preallocated output)."""
import math

import torch


def create_causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[:, None] >= i[None, :]


def create_padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]


def combine_masks(causal, padding):
    return torch.logical_and(causal[None, :, :], padding[:, None, :])


def _attend(q, k, v, mask):
    scores = torch.einsum("...nd,...md->...nm", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.full((), -1e9, dtype=scores.dtype, device=scores.device))
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("...nm,...mv->...nv", weights, v), weights


def causal_self_attention(x, W_q, W_k, W_v):
    q = torch.einsum("bnd,dk->bnk", x, W_q)
    k = torch.einsum("bnd,dk->bnk", x, W_k)
    v = torch.einsum("bnd,dk->bnk", x, W_v)
    return _attend(q, k, v, create_causal_mask(x.shape[1], device=x.device))


def attend_next(q_t, K_cache, V_cache):
    scores = torch.einsum("bd,btd->bt", q_t, K_cache) / math.sqrt(q_t.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bt,btv->bv", weights, V_cache), weights


def greedy_generate(model, prompt, max_new_tokens):
    B, t = prompt.shape
    out = prompt.new_empty((B, t + max_new_tokens))
    out[:, :t] = prompt
    with torch.no_grad():
        for s in range(t, t + max_new_tokens):
            logits = model(out[:, :s])
            out[:, s] = torch.argmax(logits[:, -1, :], dim=-1)
    return out
