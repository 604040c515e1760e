"""ex5, written differently: masked-fill-free softmax by hand, an LSTM unrolled by the module but
read via h_n[0], losses collected in a tensor and converted at the end, gradient via .grad on E only."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(low=1, high=vocab_size, size=(num_samples, seq_len), generator=generator)
    labels = tokens[:, :1].squeeze(1).clone()
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
        return self.head(h_n[0])

    def forward(self, tokens):
        x = self.embed_inputs(tokens)
        return self.classify(x)


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
        B, n = tokens.shape
        idx = torch.arange(n, device=tokens.device).expand(B, n)
        return self.embed(tokens) + self.pos(idx)

    def classify(self, x):
        d = x.shape[-1]
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        s = torch.matmul(q, k.transpose(1, 2)) / d ** 0.5
        s = s - s.amax(dim=-1, keepdim=True)
        w = s.exp() / s.exp().sum(dim=-1, keepdim=True)
        a = torch.matmul(w, v)
        return self.head(a[:, -1, :])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model, tokens, labels):
    E = model.embed_inputs(tokens).detach()
    E.requires_grad = True
    logits = model.classify(E)
    total = logits.gather(dim=1, index=labels.unsqueeze(1)).squeeze(1).sum()
    grad_E = torch.autograd.grad(outputs=total, inputs=E)[0]
    per_sample = torch.sqrt((grad_E * grad_E).sum(dim=-1))      # (B, n)
    return per_sample.sum(dim=0) / per_sample.shape[0]


def path_length(kind, seq_len):
    if kind == "lstm":
        return max(seq_len - 1, 0)
    if kind == "attention":
        return 1
    raise ValueError("kind must be 'lstm' or 'attention'")


def train(model, tokens, labels, steps, lr=1e-2):
    opt = torch.optim.Adam(model.parameters(), lr)
    record = torch.zeros(steps, dtype=torch.float64)
    for i in range(steps):
        opt.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
        record[i] = loss.detach()
        loss.backward()
        opt.step()
    return record.tolist()


def accuracy(model, tokens, labels):
    model_was_training = model.training
    model.eval()
    with torch.no_grad():
        hits = (model(tokens).argmax(dim=-1) == labels).double()
    model.train(model_was_training)
    return hits.mean().item()
