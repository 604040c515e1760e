"""Exercise 5 — LSTM vs attention (einsum attention)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=gen)
    return tokens, tokens[:, 0].contiguous().clone()


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        outputs, _ = self.lstm(x)
        return self.head(outputs[:, -1, :])

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
        pos_ids = torch.arange(tokens.shape[-1], device=tokens.device)
        return self.embed(tokens) + self.pos(pos_ids)[None]

    def classify(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        s = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(x.shape[-1])
        a = torch.einsum("bij,bjd->bid", s.softmax(-1), v)
        return self.head(a[:, -1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().clone().requires_grad_(True)
    logits = model.classify(E)
    target = torch.einsum("bc,bc->", logits, F.one_hot(labels, logits.shape[-1]).to(logits.dtype))
    G = torch.autograd.grad(target, E)[0]
    return torch.linalg.vector_norm(G, dim=-1).mean(0).detach()


def path_length(kind, seq_len):
    table = {"lstm": seq_len - 1, "attention": 1}
    if kind not in table:
        raise ValueError("kind must be 'lstm' or 'attention'")
    return int(table[kind])


def train(model, tokens, labels, steps, lr=1e-2):
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for _ in range(steps):
        optimiser.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimiser.step()
        history.append(float(loss.detach()))
    return history


def accuracy(model, tokens, labels):
    with torch.no_grad():
        hits = torch.argmax(model(tokens), dim=1).eq(labels).sum().item()
    return float(hits) / float(labels.shape[0])
