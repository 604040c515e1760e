"""Exercise 5: attention versus an LSTM on long sequences (PyTorch-tutorial style).

The LSTM classifier is the tutorials' ``nn.Embedding -> nn.LSTM(batch_first=True) ->
nn.Linear`` on ``h_n[-1]``; training is the classic ``zero_grad / backward / step`` loop with
``loss.item()`` collected in a list; evaluation runs under ``torch.no_grad()`` and computes
``(predicted == labels).float().mean().item()``.
"""
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
        super(LSTMClassifier, self).__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        lstm_out, (h_n, c_n) = self.lstm(x)
        # h_n: (num_layers, batch, hidden) -> hidden state of the last layer
        return self.head(h_n[-1])

    def forward(self, tokens):
        embedded = self.embed_inputs(tokens)
        return self.classify(embedded)


class AttentionClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_classes, max_len):
        super(AttentionClassifier, self).__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        seq_len = tokens.size(1)
        positions = torch.arange(seq_len, device=tokens.device)
        return self.embed(tokens) + self.pos(positions)

    def classify(self, x):
        Q = self.W_q(x)
        K = self.W_k(x)
        V = self.W_v(x)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(x.size(-1))
        weights = torch.softmax(scores, dim=-1)
        attended = torch.matmul(weights, V)
        return self.head(attended[:, -1, :])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    embedded = model.embed_inputs(tokens).detach()
    embedded.requires_grad_(True)
    with torch.enable_grad():
        logits = model.classify(embedded)
        target_scores = logits.gather(1, labels.view(-1, 1)).sum()
        # accumulate into embedded.grad only: the parameters' .grad stay as they are
        target_scores.backward(inputs=[embedded])
    return embedded.grad.norm(dim=2).mean(dim=0)


def path_length(kind, seq_len):
    if kind == "lstm":
        return seq_len - 1
    elif kind == "attention":
        return 1
    else:
        raise ValueError("kind must be 'lstm' or 'attention'")


def train(model, tokens, labels, steps, lr=1e-2):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for step in range(steps):
        optimizer.zero_grad()
        outputs = model(tokens)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def accuracy(model, tokens, labels):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        outputs = model(tokens)
        _, predicted = torch.max(outputs, 1)
        acc = (predicted == labels).float().mean().item()
    model.train(was_training)
    return acc
