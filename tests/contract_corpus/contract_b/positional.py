"""ex6: positional encodings (sine/cosine pairs stacked and interleaved; a pcolormesh plot)."""
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
    pairs = (d_model + 1) // 2
    p = torch.arange(max_len, dtype=torch.float64, device=device)
    two_i = 2.0 * torch.arange(pairs, dtype=torch.float64, device=device)
    angles = torch.einsum("p,i->pi", p, 10000.0 ** (-two_i / d_model))
    table = torch.stack((angles.sin(), angles.cos()), dim=-1).reshape(max_len, 2 * pairs)
    return table[:, :d_model].to(dtype)


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.pos = nn.Embedding(max_len, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        if n > self.pos.weight.shape[0]:
            raise ValueError("sequence longer than max_len")
        return x + self.pos.weight[:n]


def add_positional_encoding(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    n = x.shape[-2]
    if n > pe.shape[0]:
        raise ValueError("sequence longer than the encoding table")
    return x + pe[:n].to(device=x.device, dtype=x.dtype)


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
    train_set = make_copy_task(256, n, vocab_size, position, seed)
    test_sets = {
        "train": make_copy_task(256, n, vocab_size, position, seed + 1),
        "long": make_copy_task(256, 2 * n, vocab_size, position, seed + 2),
    }
    results: dict[str, Optional[float]] = {}
    for kind in ("sinusoidal", "learned"):
        torch.manual_seed(seed)
        positions = SinusoidalPositions() if kind == "sinusoidal" else LearnedPositionalEmbedding(n, d_model)
        model = CopyModel(vocab_size, d_model, positions)
        fit(model, train_set[0], train_set[1], steps)
        for name, (tokens, labels) in test_sets.items():
            try:
                results[f"{kind}_{name}"] = accuracy(model, tokens, labels)
            except ValueError:
                results[f"{kind}_{name}"] = None
    return results


def plot_encoding(
    pe: torch.Tensor,
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
) -> Figure:
    if isinstance(pe, torch.Tensor):
        pe = pe.detach().to("cpu", torch.float64).numpy()
    data = np.asarray(pe, dtype=np.float64)
    L, d = data.shape
    if ax is None:
        ax = plt.figure().add_subplot()
    mesh = ax.pcolormesh(np.arange(d), np.arange(L), data, shading="nearest", cmap="RdBu_r", vmin=-1.0, vmax=1.0)
    ax.set_xlim(-0.5, d - 0.5)
    ax.set_ylim(L - 0.5, -0.5)
    ax.set_xlabel("encoding dimension j")
    ax.set_ylabel("position p")
    ax.figure.colorbar(mesh, ax=ax)
    if title:
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
