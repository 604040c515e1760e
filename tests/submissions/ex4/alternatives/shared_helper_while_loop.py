"""One attention helper used everywhere (float('-inf') with masked_fill), a while loop for
generation under inference_mode, and a per-row Python list of generated tokens."""
import math

import torch


def _attend(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1)
    scores = scores / math.sqrt(K.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == False, float("-inf"))  # noqa: E712
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def create_causal_mask(seq_len, device=None):
    return torch.tril(torch.ones((seq_len, seq_len), device=device)).bool()


def create_padding_mask(lengths, max_len):
    B = lengths.shape[0]
    mask = torch.zeros(B, max_len, dtype=torch.bool, device=lengths.device)
    for b in range(B):
        mask[b, : int(lengths[b])] = True
    return mask


def combine_masks(causal, padding):
    B, n = padding.shape
    return causal.expand(B, n, n) & padding.view(B, 1, n).expand(B, n, n)


def causal_self_attention(x, W_q, W_k, W_v):
    n = x.shape[1]
    return _attend(x @ W_q, x @ W_k, x @ W_v, create_causal_mask(n, x.device))


def attend_next(q_t, K_cache, V_cache):
    out, w = _attend(q_t[:, None, :], K_cache, V_cache)
    return out[:, 0, :], w[:, 0, :]


def greedy_generate(model, prompt, max_new_tokens):
    rows = [list(map(int, row)) for row in prompt.tolist()]
    ids = prompt.clone()
    with torch.inference_mode():
        while ids.shape[1] < prompt.shape[1] + max_new_tokens:
            last = model(ids)[:, -1, :]
            best = last.max(dim=-1, keepdim=True).values
            choice = [int(torch.nonzero(last[b] == best[b])[0]) for b in range(last.shape[0])]
            for row, c in zip(rows, choice):
                row.append(c)
            ids = torch.tensor(rows, dtype=prompt.dtype, device=prompt.device)
    return ids
