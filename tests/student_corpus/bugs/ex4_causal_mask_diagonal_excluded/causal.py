"""Exercise 4 — causal masks, cached attention, greedy decoding (einsum)."""
from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch


def create_causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[None, :] < i[:, None]


def create_padding_mask(lengths, max_len):
    j = torch.arange(max_len, device=lengths.device)
    return j[None, :] < lengths[:, None]


def combine_masks(causal, padding):
    return torch.logical_and(causal[None, :, :], padding[:, None, :])


def causal_self_attention(x, W_q, W_k, W_v):
    Q = torch.einsum("bnd,dk->bnk", x, W_q)
    K = torch.einsum("bnd,dk->bnk", x, W_k)
    V = torch.einsum("bnd,dv->bnv", x, W_v)
    s = torch.einsum("bik,bjk->bij", Q, K) / math.sqrt(Q.shape[-1])
    allowed = create_causal_mask(x.shape[1], device=x.device)
    s = s.masked_fill(~allowed, -1e9)
    w = torch.softmax(s, dim=-1)
    return torch.einsum("bij,bjv->biv", w, V), w


def attend_next(q_t, K_cache, V_cache):
    s = torch.einsum("bk,btk->bt", q_t, K_cache) / math.sqrt(q_t.shape[-1])
    w = torch.softmax(s, dim=-1)
    return torch.einsum("bt,btv->bv", w, V_cache), w


def greedy_generate(model, prompt, max_new_tokens):
    out = prompt.clone()
    with torch.no_grad():
        for _ in range(max_new_tokens):
            nxt = model(out)[:, -1].argmax(dim=-1, keepdim=True)
            out = torch.cat((out, nxt.to(dtype=prompt.dtype, device=prompt.device)), dim=1)
    return out
