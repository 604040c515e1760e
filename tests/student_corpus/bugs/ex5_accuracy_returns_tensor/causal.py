# -*- coding: utf-8 -*-
"""Exercise 4 — Causal masking and generation (Windows edition)."""
from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch


def create_causal_mask(seq_len, device=None):
	full = torch.ones(seq_len, seq_len, device=device, dtype=torch.bool)
	return ~torch.triu(full, diagonal=1)


def create_padding_mask(lengths, max_len):
	grid = torch.arange(max_len, device=lengths.device).repeat(lengths.numel(), 1)
	return grid < lengths.view(-1, 1)


def combine_masks(causal, padding):
	return torch.minimum(causal.unsqueeze(0), padding.unsqueeze(-2))


def causal_self_attention(x, W_q, W_k, W_v):
	q = torch.matmul(x, W_q)
	k = torch.matmul(x, W_k)
	v = torch.matmul(x, W_v)
	n = x.size(1)
	att = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.size(-1))
	future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
	att = att.masked_fill(future, -1e9)
	att = torch.nn.functional.softmax(att, dim=-1)
	return torch.bmm(att, v), att


def attend_next(q_t, K_cache, V_cache):
	att = torch.bmm(K_cache, q_t.unsqueeze(2)).squeeze(2) / math.sqrt(q_t.size(-1))
	att = torch.nn.functional.softmax(att, dim=1)
	out = torch.bmm(att.unsqueeze(1), V_cache).squeeze(1)
	return out, att


@torch.no_grad()
def greedy_generate(model, prompt, max_new_tokens):
	ids = prompt.detach().clone()
	for _ in range(max_new_tokens):
		logits = model(ids)
		choice = logits[:, -1].argmax(-1).to(ids.dtype)
		ids = torch.hstack([ids, choice.view(-1, 1)])
	return ids
