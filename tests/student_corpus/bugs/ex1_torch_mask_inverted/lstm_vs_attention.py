# -*- coding: utf-8 -*-
"""Exercise 5 — Attention versus an LSTM on long sequences (Windows edition)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
	rng = torch.Generator().manual_seed(seed)
	X = torch.randint(1, vocab_size, (num_samples, seq_len), generator=rng)
	y = X[:, 0].clone()
	return X, y


class LSTMClassifier(nn.Module):
	def __init__(self, vocab_size, d_model, num_classes):
		super().__init__()
		self.embed = nn.Embedding(vocab_size, d_model)
		self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
		self.head = nn.Linear(d_model, num_classes)

	def embed_inputs(self, tokens):
		return self.embed(tokens)

	def classify(self, x):
		seq_out, _state = self.lstm(x)
		final = seq_out.select(1, seq_out.size(1) - 1)
		return self.head(final)

	def forward(self, tokens):
		return self.classify(self.embed_inputs(tokens))


class AttentionClassifier(nn.Module):
	def __init__(self, vocab_size, d_model, num_classes, max_len):
		super().__init__()
		self.embed = nn.Embedding(vocab_size, d_model)
		self.pos = nn.Embedding(max_len, d_model)
		self.W_q = nn.Linear(d_model, d_model, bias=True)
		self.W_k = nn.Linear(d_model, d_model, bias=True)
		self.W_v = nn.Linear(d_model, d_model, bias=True)
		self.head = nn.Linear(d_model, num_classes)

	def embed_inputs(self, tokens):
		where = torch.arange(tokens.size(1), device=tokens.device)
		return self.embed(tokens) + self.pos(where).unsqueeze(0)

	def classify(self, x):
		q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
		att = F.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(x.size(-1)), dim=-1)
		ctx = torch.bmm(att, v)
		return self.head(ctx[:, -1, :])

	def forward(self, tokens):
		return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
	emb = model.embed_inputs(tokens).detach()
	emb.requires_grad_(True)
	out = model.classify(emb)
	chosen = out.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
	grads = torch.autograd.grad(chosen.sum(), emb, retain_graph=False)[0]
	return torch.norm(grads, p=2, dim=2).mean(dim=0).detach()


def path_length(kind, seq_len):
	if kind == "lstm":
		return max(int(seq_len) - 1, 0)
	elif kind == "attention":
		return 1
	raise ValueError("kind should be 'lstm' or 'attention'")


def train(model, tokens, labels, steps, lr=1e-2):
	optim = torch.optim.Adam(model.parameters(), lr=lr)
	record = []
	for it in range(steps):
		optim.zero_grad(set_to_none=True)
		loss = F.cross_entropy(model(tokens), labels, reduction="mean")
		loss.backward()
		optim.step()
		record.append(loss.item())
	return record


def accuracy(model, tokens, labels):
	with torch.no_grad():
		logits = model(tokens)
	right = (logits.argmax(dim=1) == labels).sum().item()
	return right / labels.numel()
