"""Masks built with numpy then converted, scores scaled before the product, and a greedy
loop that concatenates along dim=-1 after model.eval()."""
import math

import numpy as np
import torch
from torch import Tensor


def create_causal_mask(seq_len: int, device=None) -> Tensor:
    return torch.from_numpy(np.tril(np.ones((seq_len, seq_len), dtype=bool))).to(device)


def create_padding_mask(lengths: Tensor, max_len: int) -> Tensor:
    positions = torch.arange(max_len, device=lengths.device).expand(len(lengths), max_len)
    return positions < lengths.view(-1, 1)


def combine_masks(causal: Tensor, padding: Tensor) -> Tensor:
    return causal.unsqueeze(0) * padding.unsqueeze(-2)


def causal_self_attention(x: Tensor, W_q: Tensor, W_k: Tensor, W_v: Tensor):
    d_k = W_q.shape[1]
    q = (x @ W_q) / math.sqrt(d_k)
    k = x @ W_k
    v = x @ W_v
    scores = torch.bmm(q, k.transpose(1, 2))
    future = torch.triu(torch.ones_like(scores, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, -1e9)
    weights = torch.softmax(scores, dim=2)
    return torch.bmm(weights, v), weights


def attend_next(q_t: Tensor, K_cache: Tensor, V_cache: Tensor):
    scores = torch.bmm(K_cache, q_t.unsqueeze(2)).squeeze(2) / math.sqrt(q_t.shape[1])
    weights = torch.softmax(scores, dim=1)
    output = (weights.unsqueeze(2) * V_cache).sum(dim=1)
    return output, weights


def greedy_generate(model, prompt: Tensor, max_new_tokens: int) -> Tensor:
    model.eval()
    tokens = prompt
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(tokens)
        next_token = logits[:, -1, :].argmax(dim=-1).unsqueeze(-1).to(prompt.dtype)
        tokens = torch.cat((tokens, next_token), dim=-1)
    return tokens.clone()
