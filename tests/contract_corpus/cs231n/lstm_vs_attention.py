"""Exercise 5: attention versus an LSTM on long sequences (plain style).

``accuracy`` is the CS231n ``check_accuracy`` pattern: predictions by argmax, then the
mean of ``y_pred == y``."""
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
        h, (h_n, c_n) = self.lstm(x)       # h: (N, T, H), h_n: (1, N, H)
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
        N, T = tokens.shape
        return self.embed(tokens) + self.pos(torch.arange(T, device=tokens.device))

    def classify(self, x):
        N, T, E = x.shape
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(E)    # (N, T, T)
        attn = F.softmax(scores, dim=2)
        out = torch.bmm(attn, V)                                   # (N, T, E)
        return self.head(out[:, T - 1, :])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().clone().requires_grad_(True)
    with torch.enable_grad():
        scores = model.classify(E)                                   # (N, C)
        N = scores.shape[0]
        correct_class_scores = scores[torch.arange(N, device=scores.device), labels]
        dE, = torch.autograd.grad(correct_class_scores.sum(), [E])
    return torch.sqrt((dE ** 2).sum(dim=2)).mean(dim=0)


def path_length(kind, seq_len):
    if kind == "lstm":
        return seq_len - 1
    if kind == "attention":
        return 1
    raise ValueError('Unrecognized kind "%s"' % kind)


def train(model, tokens, labels, steps, lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_history = []
    for t in range(steps):
        scores = model(tokens)
        loss = F.cross_entropy(scores, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_history.append(loss.item())
    return loss_history


def accuracy(model, tokens, labels):
    with torch.no_grad():
        y_pred = model(tokens).argmax(dim=1)
    return float((y_pred == labels).double().mean())
