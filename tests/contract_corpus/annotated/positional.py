"""Exercise 6: positional encodings, after the Annotated Transformer's PositionalEncoding.

The table is built as there: ``position = arange(0, max_len).unsqueeze(1)``,
``div_term = exp(arange(0, d_model, 2) * -(log(10000.0) / d_model))``,
``pe[:, 0::2] = sin(position * div_term)``, ``pe[:, 1::2] = cos(position * div_term)``;
but in float64 (then cast), and with the cosine columns cut to ``d_model // 2`` so that
odd widths work.
"""
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
    "Compute the positional encodings once in log space."
    pe = torch.zeros(max_len, d_model, dtype=torch.float64, device=device)
    position = torch.arange(0, max_len, dtype=torch.float64, device=device).unsqueeze(1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float64, device=device) * -(math.log(10000.0) / d_model)
    )
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe.to(dtype)


class LearnedPositionalEmbedding(nn.Module):
    "One trainable vector per position."

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.pos = nn.Embedding(max_len, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.size(1)
        if n > self.pos.num_embeddings:
            raise ValueError("sequence longer than the positional table")
        return x + self.pos(torch.arange(n, device=x.device))


def add_positional_encoding(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    "x + pe[:n] (cf. PositionalEncoding.forward: x + self.pe[:, : x.size(1)])."
    n = x.size(-2)
    if n > pe.size(0):
        raise ValueError("sequence longer than the positional table")
    return x + pe[:n].type_as(x).to(x.device)


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
    data = make_copy_task(256, n, vocab_size, position, seed)
    test = make_copy_task(256, n, vocab_size, position, seed + 1)
    test_long = make_copy_task(256, 2 * n, vocab_size, position, seed + 2)
    makers = {
        "sinusoidal": lambda: SinusoidalPositions(),
        "learned": lambda: LearnedPositionalEmbedding(n, d_model),
    }
    out: dict[str, Optional[float]] = {}
    for kind, make_positions in makers.items():
        torch.manual_seed(seed)
        model = CopyModel(vocab_size, d_model, make_positions())
        fit(model, *data, steps)
        out[kind + "_train"] = accuracy(model, *test)
        try:
            out[kind + "_long"] = accuracy(model, *test_long)
        except ValueError:
            out[kind + "_long"] = None
    return out


def plot_encoding(
    pe: torch.Tensor,
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
) -> Figure:
    "Seaborn-style heatmap: pcolormesh on cell edges with the y axis inverted."
    data = pe.detach().cpu().numpy() if torch.is_tensor(pe) else np.asarray(pe)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 5))
    fig = ax.figure
    L, d = data.shape
    mesh = ax.pcolormesh(np.arange(d + 1), np.arange(L + 1), data, cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xlim(0, d)
    ax.set_ylim(0, L)
    ax.invert_yaxis()
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    fig.colorbar(mesh, ax=ax)
    if title is not None:
        ax.set_title(title)
    return fig


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
