"""Exercise 5 — Attention versus an LSTM on long sequences (student solution)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)
    labels = tokens[:, 0].clone()
    return tokens, labels


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        _, (h_n, _) = self.lstm(x)
        return self.head(h_n[-1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


class AttentionClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_classes, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        n = tokens.shape[1]
        positions = torch.arange(n, device=tokens.device)
        return self.embed(tokens) + self.pos(positions)

    def classify(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        d_model = x.shape[-1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_model)
        a = torch.softmax(scores, dim=-1) @ v
        return self.head(a[:, -1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().requires_grad_(True)
    logits = model.classify(E)
    picked = logits.gather(1, labels.view(-1, 1)).sum()
    (G,) = torch.autograd.grad(picked, E)
    return G.norm(dim=-1).mean(dim=0).detach()


def path_length(kind, seq_len):
    if kind == "lstm":
        return int(seq_len - 1)
    if kind == "attention":
        return 1
    raise ValueError(f"unknown kind {kind!r}")


def train(model, tokens, labels, steps, lr=1e-2):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def accuracy(model, tokens, labels):
    with torch.no_grad():
        pred = model(tokens).argmax(dim=-1)
    return (pred == labels).float().mean().item()
