"""Exercise 4: causal masking and generation (plain style; the causal mask is built
like the CS231n captioning transformer's ``torch.tril(torch.ones(T, T))``)."""
import math

import torch


def create_causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, device=device)).bool()


def create_padding_mask(lengths, max_len):
    N = lengths.shape[0]
    idx = torch.arange(max_len, device=lengths.device).repeat(N, 1)   # (N, max_len)
    return idx < lengths[:, None]


def combine_masks(causal, padding):
    return causal[None, :, :] & padding[:, None, :]


def causal_self_attention(x, W_q, W_k, W_v):
    N, T, E = x.shape
    Q = x @ W_q                                    # (N, T, d_k)
    K = x @ W_k                                    # (N, T, d_k)
    V = x @ W_v                                    # (N, T, d_v)
    scores = Q @ K.transpose(1, 2) / math.sqrt(Q.shape[-1])   # (N, T, T)
    attn_mask = create_causal_mask(T, device=x.device)
    scores = scores.masked_fill(attn_mask == 0, -math.inf)
    attn = torch.softmax(scores, dim=-1)
    return attn @ V, attn


def attend_next(q_t, K_cache, V_cache):
    scores = (K_cache * q_t[:, None, :]).sum(dim=-1) / math.sqrt(q_t.shape[-1])   # (N, t)
    attn = torch.softmax(scores, dim=-1)
    out = (attn[:, :, None] * V_cache).sum(dim=1)                                # (N, d_v)
    return out, attn


def greedy_generate(model, prompt, max_new_tokens):
    captions = prompt.clone()
    with torch.no_grad():
        for t in range(max_new_tokens):
            scores = model(captions)          # (N, T, V)
            word = torch.argmax(scores[:, -1, :], dim=1)
            captions = torch.cat([captions, word[:, None]], dim=1)
    return captions
