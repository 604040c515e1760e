"""Exercise 6: positional encodings (the table as in the CS231n transformer assignment's
PositionalEncoding: ``i = arange(max_len)[:, None]``, ``pows = 10000 ** (-arange(0, E, 2) / E)``,
``pe[:, 0::2] = sin(i * pows)``, ``pe[:, 1::2] = cos(i * pows)``; in float64, then cast)."""
from __future__ import annotations

import math
from typing import Optional, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def sinusoidal_encoding(
    max_len: int,
    d_model: int,
    dtype: torch.dtype = torch.float32,
    device: Optional[Union[str, torch.device]] = None,
) -> torch.Tensor:
    E = d_model
    pe = torch.zeros(max_len, E, dtype=torch.float64, device=device)
    i = torch.arange(max_len, dtype=torch.float64, device=device)[:, None]
    pows = torch.pow(10000.0, -torch.arange(0, E, 2, dtype=torch.float64, device=device) / E)
    pe[:, 0::2] = torch.sin(i * pows)
    pe[:, 1::2] = torch.cos(i * pows[: E // 2])
    return pe.to(dtype)


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.pos = nn.Embedding(max_len, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, S, D = x.shape
        if S > self.pos.num_embeddings:
            raise ValueError("sequence length %d exceeds max_len %d" % (S, self.pos.num_embeddings))
        return x + self.pos(torch.arange(S, device=x.device))


def add_positional_encoding(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    S = x.shape[-2]
    if S > pe.shape[0]:
        raise ValueError("sequence length %d exceeds table length %d" % (S, pe.shape[0]))
    return x + pe[:S].to(x)


def make_copy_task(
    num_samples: int,
    seq_len: int,
    vocab_size: int,
    position: int,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (num_samples, seq_len), generator=g)
    labels = tokens[:, position].clone()
    return tokens, labels


def extrapolation_experiment(
    train_len: int = 8,
    vocab_size: int = 8,
    d_model: int = 16,
    position: int = 1,
    steps: int = 80,
    seed: int = 0,
) -> dict[str, Optional[float]]:
    n = train_len
    X_train, y_train = make_copy_task(256, n, vocab_size, position, seed)
    X_val, y_val = make_copy_task(256, n, vocab_size, position, seed + 1)
    X_long, y_long = make_copy_task(256, 2 * n, vocab_size, position, seed + 2)
    results = {}
    for kind in ("sinusoidal", "learned"):
        torch.manual_seed(seed)
        positions = SinusoidalPositions() if kind == "sinusoidal" else LearnedPositionalEmbedding(n, d_model)
        model = CopyModel(vocab_size, d_model, positions)
        fit(model, X_train, y_train, steps)
        results["%s_train" % kind] = accuracy(model, X_val, y_val)
        try:
            results["%s_long" % kind] = accuracy(model, X_long, y_long)
        except ValueError:
            results["%s_long" % kind] = None
    return results


def plot_encoding(
    pe: torch.Tensor,
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
) -> Figure:
    if torch.is_tensor(pe):
        pe = pe.detach().cpu().numpy()
    if ax is None:
        plt.figure()
        ax = plt.gca()
    im = ax.imshow(pe, interpolation="nearest", aspect="auto", cmap="coolwarm")
    im.set_clim(-1, 1)
    ax.figure.colorbar(im, ax=ax)
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    if title is not None:
        ax.set_title(title)
    return ax.figure


# --------------------------------------------------------------------------- given (complete)

class SinusoidalPositions(nn.Module):
    """Given. Adds the sinusoidal table of the input's own length: any length works."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = sinusoidal_encoding(x.shape[-2], x.shape[-1], dtype=x.dtype, device=x.device)
        return add_positional_encoding(x, table)


class CopyModel(nn.Module):
    """Given. Token embedding, positions, then ONE attention read-out with a learned query.

    ``forward(tokens (B, n)) -> logits (B, vocab_size)``: the query scores every position's
    key, the softmax of the scores weights the values, a linear head reads the sum. To copy
    the token at a fixed position, the query must single that position out, which only the
    positional information makes possible.
    """

    def __init__(self, vocab_size: int, d_model: int, positions: nn.Module) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.positions = positions                                    # adds position information
        self.query = nn.Parameter(torch.randn(d_model) / math.sqrt(d_model))
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.positions(self.token_embedding(tokens))              # (B, n, d)
        logit = torch.einsum("bnd,d->bn", self.key(h), self.query)    # (B, n)
        attn = (logit / math.sqrt(h.shape[-1])).softmax(dim=1)        # (B, n), sums to 1
        read = torch.einsum("bn,bnd->bd", attn, self.value(h))        # (B, d)
        return self.head(read)                                        # (B, vocab_size)


def fit(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor, steps: int, lr: float = 1e-2) -> None:
    """Given. Full-batch Adam on the cross-entropy, ``steps`` updates."""
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    for _step in range(steps):
        optimiser.zero_grad()
        nn.functional.cross_entropy(model(tokens), labels).backward()
        optimiser.step()


@torch.no_grad()
def accuracy(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    """Given. Fraction of samples whose largest logit is the label (no gradients)."""
    hits = model(tokens).argmax(dim=-1).eq(labels)
    return hits.double().mean().item()
