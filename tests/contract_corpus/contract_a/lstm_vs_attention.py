"""Exercise 5 — Attention versus an LSTM on long sequences.

Task: a sequence of random tokens whose label is its first token.
"""
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
        _, (h_n, _) = self.lstm(x)          # h_n: (num_layers, B, d_model)
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
        Q = self.W_q(x)
        K = self.W_k(x)
        V = self.W_v(x)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(x.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        out = weights @ V                   # (B, n, d_model)
        return self.head(out[:, -1])        # read out at the last position

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    """(n,) mean over the batch of ||d sum_b logit[b, labels[b]] / d E[b, t]||."""
    E = model.embed_inputs(tokens).detach().requires_grad_(True)
    logits = model.classify(E)
    score = logits.gather(1, labels.unsqueeze(1)).sum()
    (grad,) = torch.autograd.grad(score, E)    # does not touch the parameters' .grad
    return grad.norm(dim=-1).mean(dim=0)


def path_length(kind, seq_len):
    """Sequential steps from position 0 to the last position."""
    if kind == "lstm":
        return seq_len - 1
    return 1


def train(model, tokens, labels, steps, lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def accuracy(model, tokens, labels):
    with torch.no_grad():
        preds = model(tokens).argmax(dim=-1)
        return (preds == labels).float().mean().item()
