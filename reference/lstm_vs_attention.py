"""ex5 reference: attention versus an LSTM on a long-range recall task.

Task: a sequence of random tokens in [1, vocab_size) whose label is its FIRST token.
An LSTM must carry that token through n − 1 recurrent steps; attention reaches it in
one step from the last position.

Both models split into ``embed_inputs(tokens) -> x (B, n, d_model)`` and
``classify(x) -> logits (B, num_classes)`` so that gradients w.r.t. the input
embeddings can be measured (``input_gradient_norms``).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["make_recall_dataset", "LSTMClassifier", "AttentionClassifier",
           "input_gradient_norms", "path_length", "train", "accuracy"]


def make_recall_dataset(
    num_samples: int, seq_len: int, vocab_size: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """tokens (num_samples, seq_len) int64 in [1, vocab_size); labels = tokens[:, 0] (a copy)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)
    labels = tokens[:, 0].clone()
    return tokens, labels


class LSTMClassifier(nn.Module):
    """Embedding -> one-layer LSTM -> linear head on the final hidden state."""

    def __init__(self, vocab_size: int, d_model: int, num_classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, n) int -> (B, n, d_model)."""
        return self.embed(tokens)

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n, d_model) -> logits (B, num_classes) from the final hidden state."""
        _, (h_n, _) = self.lstm(x)                         # h_n (num_layers=1, B, d_model)
        return self.head(h_n[-1])                          # (B, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.classify(self.embed_inputs(tokens))


class AttentionClassifier(nn.Module):
    """Token + position embeddings -> single-head self-attention -> head at the last position."""

    def __init__(self, vocab_size: int, d_model: int, num_classes: int, max_len: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def embed_inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, n) int -> embed(tokens) + pos(arange(n)), (B, n, d_model)."""
        n = tokens.shape[1]
        positions = torch.arange(n, device=tokens.device)  # (n,)
        return self.embed(tokens) + self.pos(positions)    # (B, n, d) + (n, d)

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n, d_model) -> logits (B, num_classes): unmasked self-attention, last position."""
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)    # (B, n, d_model) each
        scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])   # (B, n, n)
        weights = torch.softmax(scores, dim=-1)            # (B, n, n)
        attended = weights @ v                             # (B, n, d_model)
        return self.head(attended[:, -1])                  # (B, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.classify(self.embed_inputs(tokens))


def input_gradient_norms(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """How strongly the correct-class logit depends on each input position.

    With E = model.embed_inputs(tokens) detached and requiring grad, computes
    G = d/dE sum_b classify(E)[b, labels[b]] and returns (n,) with entry t equal to the
    batch mean of ||G[b, t]||₂, in E's dtype. Uses ``torch.autograd.grad`` so the
    parameters' ``.grad`` are left untouched.
    """
    with torch.enable_grad():
        E = model.embed_inputs(tokens).detach().requires_grad_(True)    # (B, n, d_model)
        logits = model.classify(E)                                      # (B, num_classes)
        target = logits.gather(1, labels[:, None]).sum()                # scalar
        (grad,) = torch.autograd.grad(target, E)                        # (B, n, d_model)
    return grad.norm(dim=-1).mean(dim=0)                                # (n,)


def path_length(kind: str, seq_len: int) -> int:
    """Sequential steps from position 0 to the last position: LSTM n − 1, attention 1.

    Raises:
        ValueError: for a ``kind`` other than "lstm" or "attention".
    """
    if kind == "lstm":
        return seq_len - 1
    if kind == "attention":
        return 1
    raise ValueError(f"unknown kind {kind!r}: expected 'lstm' or 'attention'")


def train(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor,
          steps: int, lr: float = 1e-2) -> list[float]:
    """Full-batch Adam on cross-entropy; returns each step's loss, measured before its update."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def accuracy(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of samples whose argmax logit equals the label (no gradients)."""
    with torch.no_grad():
        predictions = model(tokens).argmax(dim=-1)        # (B,)
        return (predictions == labels).to(torch.float64).mean().item()
