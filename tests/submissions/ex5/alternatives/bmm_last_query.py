"""ex5, written differently: bmm attention for the last query only, explicit zero LSTM state,
loss recorded with zero_grad at the end of each step, accuracy in inference mode."""
import math

import numpy as np
import torch
from torch import nn


def make_recall_dataset(num_samples: int, seq_len: int, vocab_size: int, seed: int):
    gen = torch.Generator().manual_seed(int(seed))
    tokens = torch.randint(1, vocab_size, size=(num_samples, seq_len), generator=gen, dtype=torch.long)
    return tokens, tokens[:, 0].detach().clone()


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, num_classes: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        B = x.shape[0]
        h0 = x.new_zeros(1, B, self.lstm.hidden_size)
        c0 = x.new_zeros(1, B, self.lstm.hidden_size)
        _, (h, c) = self.lstm(x, (h0, c0))
        return self.head(h.squeeze(0))

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


class AttentionClassifier(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, num_classes: int, max_len: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens):
        n = tokens.size(1)
        return self.embed(tokens) + self.pos.weight[:n]

    def classify(self, x):
        # only the last position's output is used, so only its query is needed
        q = self.W_q(x[:, -1:, :]) / math.sqrt(x.size(-1))      # (B, 1, d)
        k = self.W_k(x)                                          # (B, n, d)
        v = self.W_v(x)
        w = torch.bmm(q, k.transpose(1, 2)).softmax(dim=-1)      # (B, 1, n)
        return self.head(torch.bmm(w, v).squeeze(1))

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    with torch.enable_grad():
        E = model.embed_inputs(tokens).detach().requires_grad_()
        logits = model.classify(E)
        target = torch.sum(logits * nn.functional.one_hot(labels, logits.shape[-1]).to(logits.dtype))
        (g,) = torch.autograd.grad(target, E)
    return g.pow(2).sum(-1).sqrt().mean(0)


def path_length(kind: str, seq_len: int) -> int:
    if kind == "attention":
        return 1
    elif kind == "lstm":
        return int(seq_len) - 1
    raise ValueError(f"bad kind {kind}")


def train(model, tokens, labels, steps, lr=1e-2):
    optimizer = torch.optim.Adam(params=model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(tokens), labels, reduction="mean")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        losses.append(loss.detach().item())
    return losses


def accuracy(model, tokens, labels):
    with torch.inference_mode():
        preds = torch.argmax(model(tokens), dim=-1)
    return float(np.mean((preds == labels).numpy()))
