"""Exercise 4: causal masking and generation (plain PyTorch-tutorial style).

The causal mask is the complement of the upper triangle that the PyTorch tutorials'
``generate_square_subsequent_mask`` fills with -inf (the *forbidden* positions):
here True = may attend.
"""
import math

import torch


def create_causal_mask(seq_len, device=None):
    upper = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)
    return ~upper


def create_padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device).expand(len(lengths), max_len)
    return positions < lengths.unsqueeze(1)


def combine_masks(causal, padding):
    return torch.logical_and(causal.unsqueeze(0), padding.unsqueeze(1))


def causal_self_attention(x, W_q, W_k, W_v):
    Q = torch.matmul(x, W_q)
    K = torch.matmul(x, W_k)
    V = torch.matmul(x, W_v)
    seq_len = x.size(1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))
    mask = create_causal_mask(seq_len, device=x.device)
    scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    output = torch.matmul(weights, V)
    return output, weights


def attend_next(q_t, K_cache, V_cache):
    # (B, t, d_k) @ (B, d_k, 1) -> (B, t)
    scores = torch.bmm(K_cache, q_t.unsqueeze(2)).squeeze(2) / math.sqrt(q_t.size(-1))
    weights = torch.softmax(scores, dim=-1)
    # (B, 1, t) @ (B, t, d_v) -> (B, d_v)
    output = torch.bmm(weights.unsqueeze(1), V_cache).squeeze(1)
    return output, weights


def greedy_generate(model, prompt, max_new_tokens):
    generated = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(generated)
            next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            generated = torch.cat([generated, next_token], dim=1)
    return generated
