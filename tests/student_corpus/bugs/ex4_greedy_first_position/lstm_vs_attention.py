"""Exercise 5 — LSTM vs attention on the recall task."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)
    labels = torch.empty(num_samples, dtype=torch.long)
    for i in range(num_samples):
        labels[i] = tokens[i, 0]
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
        out, (h_n, c_n) = self.lstm(x)
        h_last = h_n.squeeze(0)
        return self.head(h_last)

    def forward(self, tokens):
        x = self.embed_inputs(tokens)
        return self.classify(x)


class AttentionClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_classes, max_len):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        B, n = tokens.shape
        idx = torch.arange(n, device=tokens.device).unsqueeze(0).expand(B, n)
        return self.embed(tokens) + self.pos(idx)

    def classify(self, x):
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d_model)
        w = torch.softmax(scores, dim=2)
        a = torch.bmm(w, v)
        return self.head(a[:, a.shape[1] - 1, :])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    with torch.no_grad():
        E = model.embed_inputs(tokens)
    E = E.detach().requires_grad_(True)
    logits = model.classify(E)
    total = logits[0, labels[0]]
    for b in range(1, logits.shape[0]):
        total = total + logits[b, labels[b]]
    (G,) = torch.autograd.grad(total, [E])
    norms = torch.sqrt((G * G).sum(dim=-1))
    result = norms.sum(dim=0) / norms.shape[0]
    return result.detach()


def path_length(kind, seq_len):
    if kind == "lstm":
        steps = 0
        for _ in range(1, seq_len):
            steps += 1
        return steps
    elif kind == "attention":
        return 1
    else:
        raise ValueError("unknown kind: " + repr(kind))


def train(model, tokens, labels, steps, lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    step = 0
    while step < steps:
        optimizer.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
        step += 1
    return losses


def accuracy(model, tokens, labels):
    correct = 0
    with torch.no_grad():
        logits = model(tokens)
        preds = torch.argmax(logits, dim=-1)
        for p, y in zip(preds.tolist(), labels.tolist()):
            if p == y:
                correct += 1
    return correct / len(labels)
