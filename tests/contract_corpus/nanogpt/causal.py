"""Exercise 4: causal masking and generation, the nanoGPT way.

The causal mask is nanoGPT's ``torch.tril(torch.ones(T, T))`` "bias", used through
``masked_fill(bias == 0, float('-inf'))``; generation is nanoGPT's ``generate()`` loop
(forward the whole sequence, keep ``logits[:, -1, :]``, append with ``torch.cat``),
made greedy with ``argmax`` (lowest index on ties).
"""
import math

import torch
from torch.nn import functional as F


def create_causal_mask(seq_len, device=None):
    """(seq_len, seq_len) boolean mask, True on and below the diagonal."""
    return torch.tril(torch.ones(seq_len, seq_len, device=device)) == 1


def create_padding_mask(lengths, max_len):
    """(B, max_len) boolean mask, True at positions < lengths[b]."""
    pos = torch.arange(0, max_len, dtype=torch.long, device=lengths.device)  # shape (t)
    return pos.unsqueeze(0) < lengths.unsqueeze(1)


def combine_masks(causal, padding):
    """(B, n, n): causal[i, j] and padding[b, j]."""
    return causal.unsqueeze(0) & padding.unsqueeze(1)


def causal_self_attention(x, W_q, W_k, W_v):
    """Single-head causal self-attention with plain weight matrices."""
    B, T, C = x.size()
    q = x @ W_q
    k = x @ W_k
    v = x @ W_v
    bias = torch.tril(torch.ones(T, T, device=x.device)).view(1, T, T)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(bias[:, :T, :T] == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ v
    return y, att


def attend_next(q_t, K_cache, V_cache):
    """One decoding step: the new query attends to all t cached keys/values."""
    q = q_t.unsqueeze(1)                                                   # (B, 1, d_k)
    att = (q @ K_cache.transpose(-2, -1)) * (1.0 / math.sqrt(K_cache.size(-1)))  # (B, 1, t)
    att = F.softmax(att, dim=-1)
    y = att @ V_cache                                                      # (B, 1, d_v)
    return y.squeeze(1), att.squeeze(1)


@torch.no_grad()
def greedy_generate(model, prompt, max_new_tokens):
    """Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
    the sequence max_new_tokens times, feeding the predictions back into the model each time."""
    idx = prompt
    for _ in range(max_new_tokens):
        # forward the model to get the logits for the index in the sequence
        logits = model(idx)
        # pluck the logits at the final step
        logits = logits[:, -1, :]
        # greedy: the most likely element (argmax returns the first maximal index)
        idx_next = torch.argmax(logits, dim=-1, keepdim=True)
        # append sampled index to the running sequence and continue
        idx = torch.cat((idx, idx_next), dim=1)
    return idx
