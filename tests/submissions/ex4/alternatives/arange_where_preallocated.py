"""Masks from index comparisons, torch.where with -1e9, einsum, and a preallocated greedy loop."""
import math

import torch


def create_causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None]


def create_padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(-1)


def combine_masks(causal, padding):
    return torch.logical_and(causal.unsqueeze(0), padding.unsqueeze(1))


def causal_self_attention(x, W_q, W_k, W_v):
    Q = torch.einsum("bnd,dk->bnk", x, W_q)
    K = torch.einsum("bnd,dk->bnk", x, W_k)
    V = torch.einsum("bnd,dv->bnv", x, W_v)
    scores = torch.einsum("bik,bjk->bij", Q, K) / math.sqrt(Q.shape[-1])
    allowed = create_causal_mask(x.shape[1], device=x.device)
    scores = torch.where(allowed, scores, torch.full_like(scores, -1e9))
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bij,bjv->biv", weights, V), weights


def attend_next(q_t, K_cache, V_cache):
    scores = torch.einsum("bk,btk->bt", q_t, K_cache) / math.sqrt(q_t.shape[-1])
    weights = scores.softmax(-1)
    return torch.einsum("bt,btv->bv", weights, V_cache), weights


def greedy_generate(model, prompt, max_new_tokens):
    B, t = prompt.shape
    out = torch.empty(B, t + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    out[:, :t] = prompt
    with torch.no_grad():
        for step in range(t, t + max_new_tokens):
            logits = model(out[:, :step])
            out[:, step] = torch.argmax(logits[:, -1], dim=-1)
    return out
