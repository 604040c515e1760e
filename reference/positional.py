"""ex6 reference: positional encodings (sinusoidal and learned), and what each can encode.

Sinusoidal table of "Attention Is All You Need" (Vaswani et al., 2017, section 3.5), with
positions counted from 0 and ω_i = 1 / 10000^(2i / d_model):

    PE[p, 2i]     = sin(p · ω_i)
    PE[p, 2i + 1] = cos(p · ω_i)

For an odd d_model the last column (index d_model − 1 = 2i) is a sine with no cosine partner:
the table is the first d_model columns of the table for d_model + 1 (with ω from d_model).

Every pair (2i, 2i+1) rotates by the angle k·ω_i when the position moves by k, so
PE[p + k] = M_k PE[p] with M_k block-diagonal (``offset_matrix``), the same for every p.
Computed in float64, then cast to the requested dtype.
"""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["sinusoidal_encoding", "LearnedPositionalEmbedding", "add_positional_encoding",
           "make_copy_task", "extrapolation_experiment", "plot_encoding",
           "frequencies", "offset_matrix"]

BASE = 10000.0


def frequencies(d_model: int) -> torch.Tensor:
    """ω_i = 1 / BASE^(2i / d_model) for i = 0 … ceil(d_model / 2) − 1, float64. (ceil(d/2),)"""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)              # (ceil(d/2),)
    return torch.exp(-math.log(BASE) * two_i / d_model)


def sinusoidal_encoding(max_len: int, d_model: int, dtype: torch.dtype = torch.float32,
                        device: torch.device | str | None = None) -> torch.Tensor:
    """(max_len, d_model): sines in even columns, cosines in odd ones, positions 0 … max_len−1."""
    pos = torch.arange(max_len, dtype=torch.float64)                        # (L,)
    angles = pos[:, None] * frequencies(d_model)[None, :]                   # (L, ceil(d/2))
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1)                  # (L, ceil(d/2), 2)
    pe = pe.reshape(max_len, -1)[:, :d_model]                               # (L, d) interleaved
    return pe.to(dtype=dtype, device=device)


def offset_matrix(k: int, d_model: int) -> torch.Tensor:
    """M_k (d_model, d_model), float64, with PE[p + k] = M_k @ PE[p] for every position p.

    Block i acts on the pair (sin(p ω_i), cos(p ω_i)) as the rotation by k ω_i:
    [[cos, sin], [−sin, cos]]. For odd d_model the lone sine column has no partner, so the
    property holds on the first 2·floor(d_model / 2) columns only (the last entry is 0).
    """
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(frequencies(d_model).tolist()):
        if 2 * i + 1 >= d_model:
            break
        c, s = math.cos(k * w), math.sin(k * w)
        M[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    return M


class LearnedPositionalEmbedding(nn.Module):
    """A trainable row per position 0 … max_len−1, added to the token embeddings."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.pos = nn.Embedding(max_len, d_model)                           # (max_len, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-2]                                                     # x: (B, n, d_model)
        if n > self.pos.num_embeddings:
            raise ValueError(f"sequence length {n} is longer than max_len={self.pos.num_embeddings}: "
                             "a learned table has no row for those positions")
        positions = torch.arange(n, device=x.device)                        # (n,)
        return x + self.pos(positions)                                      # (B, n, d) + (n, d)


def add_positional_encoding(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """x (..., n, d_model) + pe[:n] (pe: (L ≥ n, d_model)), in x's dtype and on x's device."""
    n = x.shape[-2]
    if n > pe.shape[0]:
        raise ValueError(f"the table has {pe.shape[0]} positions, the input {n}")
    return x + pe[:n].to(dtype=x.dtype, device=x.device)                   # broadcast over ...


def make_copy_task(num_samples: int, seq_len: int, vocab_size: int, position: int,
                   seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """tokens (N, n) int64 in [0, vocab_size); labels = tokens[:, position] (a copy)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (num_samples, seq_len), generator=g)
    return tokens, tokens[:, position].clone()


# --------------------------------------------------------------------------- the experiment

class _Sinusoidal(nn.Module):
    """Adds the sinusoidal table for whatever length comes in (no parameters)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return add_positional_encoding(x, sinusoidal_encoding(x.shape[-2], x.shape[-1], x.dtype))


class _CopyModel(nn.Module):
    """embed + positions -> one attention read-out with a learned query -> logits (B, vocab)."""

    def __init__(self, vocab_size: int, d_model: int, positions: nn.Module) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.positions = positions
        self.query = nn.Parameter(torch.randn(d_model) / math.sqrt(d_model))
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.positions(self.embed(tokens))                              # (B, n, d)
        scores = self.W_k(x) @ self.query / math.sqrt(x.shape[-1])          # (B, n)
        weights = torch.softmax(scores, dim=-1)                             # (B, n)
        return self.head((weights[..., None] * self.W_v(x)).sum(dim=1))     # (B, vocab)


def _fit(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor, steps: int, lr: float) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(tokens), labels).backward()
        opt.step()


def _accuracy(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(tokens).argmax(dim=-1) == labels).float().mean())


def extrapolation_experiment(train_len: int = 8, vocab_size: int = 8, d_model: int = 16,
                             position: int = 1, steps: int = 80, seed: int = 0) -> dict[str, float | None]:
    """Train on length train_len, test on train_len and 2·train_len, for both encodings."""
    tokens, labels = make_copy_task(256, train_len, vocab_size, position, seed)
    short = make_copy_task(256, train_len, vocab_size, position, seed + 1)
    long = make_copy_task(256, 2 * train_len, vocab_size, position, seed + 2)
    out: dict[str, float | None] = {}
    for kind in ("sinusoidal", "learned"):
        torch.manual_seed(seed)
        positions = _Sinusoidal() if kind == "sinusoidal" else LearnedPositionalEmbedding(train_len, d_model)
        model = _CopyModel(vocab_size, d_model, positions)
        _fit(model, tokens, labels, steps, lr=1e-2)
        out[f"{kind}_train"] = _accuracy(model, *short)
        try:
            out[f"{kind}_long"] = _accuracy(model, *long)
        except ValueError:                       # the learned table has no row beyond train_len
            out[f"{kind}_long"] = None
    return out


def plot_encoding(pe: torch.Tensor, ax=None, title: str | None = None):
    """Heatmap of pe (max_len, d_model): position p is row p from the top; returns the Figure."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    image = ax.imshow(pe.detach().cpu().numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xlabel("encoding dimension")
    ax.set_ylabel("position")
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax)
    return ax.figure
