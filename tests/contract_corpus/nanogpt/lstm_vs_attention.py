"""Exercise 5: attention versus an LSTM on long sequences.

The attention classifier embeds like nanoGPT's GPT.forward (``wte(idx) + wpe(pos)`` with
``pos = torch.arange(0, t, dtype=torch.long, device=device)``) and attends like its
CausalSelfAttention (without the causal mask: the contract asks for unmasked attention).
"""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


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
        b, t = tokens.size()
        pos = torch.arange(0, t, dtype=torch.long, device=tokens.device)  # shape (t)
        tok_emb = self.embed(tokens)  # (b, t, d_model)
        pos_emb = self.pos(pos)       # (t, d_model)
        return tok_emb + pos_emb

    def classify(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=-1)
        y = att @ v                       # (B, T, C)
        return self.head(y[:, -1, :])     # read out the last position

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().requires_grad_(True)
    with torch.enable_grad():
        logits = model.classify(E)
        score = logits.gather(1, labels.unsqueeze(1)).sum()
        (grad,) = torch.autograd.grad(score, E)   # parameters' .grad untouched
    return grad.norm(dim=-1).mean(dim=0)


def path_length(kind, seq_len):
    if kind == "lstm":
        return seq_len - 1
    if kind == "attention":
        return 1
    raise ValueError(f"unknown kind {kind!r}")


def train(model, tokens, labels, steps, lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def accuracy(model, tokens, labels):
    logits = model(tokens)
    pred = logits.argmax(dim=-1)
    return (pred == labels).sum().item() / labels.size(0)
