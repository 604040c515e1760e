"""ex5, written differently: LSTM read from output[:, -1], einsum attention, accuracy via bools.

For a one-layer unidirectional LSTM, output[:, -1] is the final hidden state h_n.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)
    labels = torch.tensor(tokens[:, 0].tolist(), dtype=torch.long)   # a fresh tensor
    return tokens, labels


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(input_size=d_model, hidden_size=d_model, num_layers=1, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        output, _ = self.lstm(x)
        return self.head(output[:, -1, :])

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
        positions = torch.arange(tokens.shape[-1], device=tokens.device).unsqueeze(0)   # (1, n)
        return self.embed(tokens) + self.pos(positions)

    def classify(self, x):
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)
        scores = torch.einsum("bid,bjd->bij", q, k) * (1.0 / math.sqrt(q.shape[-1]))
        weights = F.softmax(scores, dim=-1)
        out = torch.einsum("bij,bjd->bid", weights, v)
        return self.head(out[:, out.shape[1] - 1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach().clone()
    E.requires_grad_(True)
    logits = model.classify(E)
    picked = logits[torch.arange(len(labels)), labels]
    grad = torch.autograd.grad(picked.sum(), [E])[0]
    return torch.linalg.vector_norm(grad, dim=2).mean(0)


def path_length(kind, seq_len):
    lengths = {"lstm": seq_len - 1, "attention": 1}
    if kind not in lengths:
        raise ValueError(kind)
    return lengths[kind]


def train(model, tokens, labels, steps, lr=1e-2):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    history = []
    for step in range(steps):
        loss = loss_fn(model(tokens), labels)
        history.append(float(loss))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return history


def accuracy(model, tokens, labels):
    with torch.no_grad():
        correct = model(tokens).argmax(1) == labels
    return correct.sum().item() / correct.numel()
