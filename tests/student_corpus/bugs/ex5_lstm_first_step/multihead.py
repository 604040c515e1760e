# -*- coding: utf-8 -*-
"""Exercise 3 — Multi-head attention (Windows edition)."""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn


def split_heads(x, num_heads):
	batch, length, width = x.size()
	return x.unflatten(-1, (num_heads, width // num_heads)).transpose(1, 2)


def combine_heads(x):
	return x.transpose(1, 2).flatten(start_dim=2)


class MultiHeadAttention(nn.Module):
	def __init__(self, d_model, num_heads, bias=True):
		super().__init__()
		if d_model % num_heads != 0:
			raise ValueError("d_model %d not divisible by num_heads %d" % (d_model, num_heads))
		self.heads = num_heads
		self.depth = d_model // num_heads
		for name in ("W_q", "W_k", "W_v", "W_o"):
			setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

	def forward(self, query, key, value, mask=None):
		Qh = split_heads(self.W_q(query), self.heads)
		Kh = split_heads(self.W_k(key), self.heads)
		Vh = split_heads(self.W_v(value), self.heads)
		logits = torch.matmul(Qh, Kh.transpose(-2, -1)) / math.sqrt(self.depth)
		if mask is not None:
			logits = logits.masked_fill(mask.logical_not(), -1e9)
		attn = torch.nn.functional.softmax(logits, dim=-1)
		merged = combine_heads(torch.matmul(attn, Vh))
		return self.W_o(merged), attn
