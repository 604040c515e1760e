"""Exercise 5: attention versus an LSTM on long sequences.

The attention classifier reuses the Annotated Transformer's ``attention()`` helper (no
mask); the training step is its ``run_epoch`` order: forward, ``loss.backward()``,
``optimizer.step()``, ``optimizer.zero_grad(set_to_none=True)``.
"""
import math

import torch
import torch.nn as nn


def attention(query, key, value, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)
    labels = tokens[:, 0].clone()
    return tokens, labels


class LSTMClassifier(nn.Module):
    "Embedding -> LSTM -> linear read-out of the final hidden state."

    def __init__(self, vocab_size, d_model, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        output, (h_n, c_n) = self.lstm(x)
        return self.head(h_n[-1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


class AttentionClassifier(nn.Module):
    "Token + learned position embeddings -> one attention layer -> read-out of the last position."

    def __init__(self, vocab_size, d_model, num_classes, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        return self.embed(tokens) + self.pos(positions)

    def classify(self, x):
        x, _ = attention(self.W_q(x), self.W_k(x), self.W_v(x))
        return self.head(x[:, -1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().requires_grad_()
    with torch.enable_grad():
        logits = model.classify(E)
        picked = logits[torch.arange(logits.size(0), device=logits.device), labels]
        grad = torch.autograd.grad(picked.sum(), E)[0]
    return torch.linalg.vector_norm(grad, dim=-1).mean(0)


def path_length(kind, seq_len):
    return {"lstm": seq_len - 1, "attention": 1}[kind]


def train(model, tokens, labels, steps, lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        out = model(tokens)
        loss = criterion(out, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def accuracy(model, tokens, labels):
    with torch.no_grad():
        pred = model(tokens).argmax(dim=-1)
        return (pred == labels).double().mean().item()
