"""Exercise 4: causal masking and generation, the Annotated Transformer way.

``subsequent_mask`` builds the causal mask as ``torch.triu(ones, diagonal=1) == 0``;
``make_std_mask`` combines it with a padding mask by ``&``; ``greedy_decode`` starts from
the prompt, takes the argmax of the last position's distribution with ``torch.max`` and
concatenates it with ``torch.cat``.
"""
import math

import torch


def attention(query, key, value, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


def subsequent_mask(size, device=None):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    mask = torch.triu(torch.ones(attn_shape, device=device), diagonal=1).type(torch.uint8)
    return mask == 0


def create_causal_mask(seq_len, device=None):
    return subsequent_mask(seq_len, device=device)[0]


def create_padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(-1)


def combine_masks(causal, padding):
    "Create a mask to hide padding and future words (cf. Batch.make_std_mask)."
    tgt_mask = padding.unsqueeze(-2)
    tgt_mask = tgt_mask & causal.type_as(tgt_mask.data)
    return tgt_mask


def causal_self_attention(x, W_q, W_k, W_v):
    query, key, value = torch.matmul(x, W_q), torch.matmul(x, W_k), torch.matmul(x, W_v)
    mask = subsequent_mask(x.size(1), device=x.device)
    return attention(query, key, value, mask=mask)


def attend_next(q_t, K_cache, V_cache):
    out, p_attn = attention(q_t.unsqueeze(-2), K_cache, V_cache)
    return out.squeeze(-2), p_attn.squeeze(-2)


def greedy_generate(model, prompt, max_new_tokens):
    ys = prompt.clone()
    for i in range(max_new_tokens):
        with torch.no_grad():
            prob = model(ys)[:, -1]
        _, next_word = torch.max(prob, dim=1)
        ys = torch.cat([ys, next_word.unsqueeze(1).type_as(ys)], dim=1)
    return ys
