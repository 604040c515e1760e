"""ex5: an LSTM and a one-layer attention classifier on the recall task."""
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
        outputs, _ = self.lstm(x)
        return self.head(outputs[:, -1, :])   # the last time step's output is the final hidden state

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
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return self.embed(tokens) + self.pos(positions)

    def classify(self, x):
        # only the last position's output is read, so only its query is needed
        q_last = self.W_q(x[:, -1, :])                       # (B, d)
        k = self.W_k(x)                                      # (B, n, d)
        v = self.W_v(x)
        scores = torch.einsum("bd,bnd->bn", q_last, k) / math.sqrt(x.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return self.head(torch.einsum("bn,bnd->bd", weights, v))

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().requires_grad_(True)
    with torch.enable_grad():
        logits = model.classify(E)
        total = torch.take_along_dim(logits, labels[:, None], dim=1).sum()
        (grad,) = torch.autograd.grad(total, E)
    return torch.linalg.vector_norm(grad, ord=2, dim=-1).mean(dim=0)


def path_length(kind, seq_len):
    return seq_len - 1 if kind == "lstm" else 1


def train(model, tokens, labels, steps, lr=1e-2):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        history.append(float(loss.detach()))
        loss.backward()
        opt.step()
    return history


def accuracy(model, tokens, labels):
    with torch.no_grad():
        hits = int((model(tokens).argmax(dim=-1) == labels).sum())
    return hits / len(labels)
