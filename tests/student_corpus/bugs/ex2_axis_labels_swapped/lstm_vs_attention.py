"""Exercise 5 — LSTM vs attention; the attention scores are computed in float64."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)
    labels = tokens[:, 0].detach().clone()
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
        B = x.shape[0]
        d = self.lstm.hidden_size
        h0 = torch.zeros(1, B, d, dtype=x.dtype, device=x.device)
        c0 = torch.zeros(1, B, d, dtype=x.dtype, device=x.device)
        _, (h_n, _) = self.lstm(x, (h0, c0))
        return self.head(h_n[0])

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
        return self.embed(tokens) + self.pos.weight[:n].unsqueeze(0)

    def classify(self, x):
        dtype = x.dtype
        q = self.W_q(x).double()
        k = self.W_k(x).double()
        v = self.W_v(x).double()
        w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(x.shape[-1]), dim=-1)
        a = (w @ v).to(dtype)
        return self.head(a[:, -1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().requires_grad_()
    logits = model.classify(E)
    score = logits[torch.arange(logits.shape[0], device=logits.device), labels].sum()
    G = torch.autograd.grad(score, E)[0]
    norms = G.double().pow(2).sum(-1).sqrt().mean(0)
    return norms.to(G.dtype).detach()


def path_length(kind, seq_len):
    if kind == "attention":
        return 1
    if kind == "lstm":
        return int(seq_len) - 1
    raise ValueError(f"kind must be 'lstm' or 'attention', got {kind!r}")


def train(model, tokens, labels, steps, lr=1e-2):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        losses.append(float(loss.item()))
        loss.backward()
        opt.step()
    return losses


def accuracy(model, tokens, labels):
    with torch.no_grad():
        pred = model(tokens).argmax(dim=-1)
        return float((pred == labels).double().mean().item())
