# ex6 · Positional encodings — student file `positional.py`.
# Replace every `raise NotImplementedError(...)` with your code; keep the names
# and signatures. Rules and how to check your work: README.md in this folder.
"""Exercise 6 — Positional encodings.

Attention compares every position with every other one, and a permutation of the input
permutes its output in the same way: on its own it cannot tell "The cat sat on the mat"
from "mat the on sat cat The". Adding a *positional encoding* to each token embedding
gives the model the order. You will write the fixed sinusoidal encoding of "Attention Is
All You Need" (Vaswani et al., 2017, section 3.5), a learned positional embedding, the
addition itself, a heatmap of the encodings, and a small experiment: which of the two can
handle sequences longer than those seen in training?

Conventions used throughout (they are also what the grader checks):

* Positions are counted from 0. Tables have shape ``(max_len, d_model)``: row ``p`` is
  the encoding of position ``p``.
* Keep the requested (or the input's) dtype and device, stay differentiable (no
  ``.detach()``, ``.numpy()`` or ``.item()`` on the computation path), and never modify
  inputs in place.
* Not allowed: ``torch.nn.MultiheadAttention`` and
  ``torch.nn.functional.scaled_dot_product_attention``.
* This file must be self-contained: import only the standard library, ``numpy``,
  ``torch`` and ``matplotlib``.

The classes and functions marked *given* at the end are complete: the experiment uses
them, you do not change them.
"""
from __future__ import annotations

import math
from typing import Optional, Union

import matplotlib.pyplot as plt
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
    """The fixed sinusoidal positional encoding table.

    With positions ``p = 0 … max_len−1`` and ``i = 0, 1, …``::

        PE[p, 2i]     = sin(p / 10000^(2i / d_model))
        PE[p, 2i + 1] = cos(p / 10000^(2i / d_model))

    so columns ``2i`` and ``2i + 1`` share one frequency (sine first, cosine second,
    interleaved), and the frequencies fall from 1 (columns 0 and 1) towards 1/10000.
    When ``d_model`` is odd, the last column ``d_model − 1 = 2i`` is the sine of its
    pair, ``sin(p / 10000^((d_model − 1) / d_model))``, with no cosine after it.

    Args:
        max_len: number of positions ``L`` (``>= 1``).
        d_model: width of the encoding (``>= 1``, even or odd).
        dtype: floating dtype of the result; the values are as accurate as that dtype
            allows (for ``torch.float64``, compute in float64).
        device: device of the result (``None``: the default device).

    Returns:
        A ``(max_len, d_model)`` tensor of ``dtype`` on ``device``, every entry in
        ``[−1, 1]``. Row 0 is ``[0, 1, 0, 1, …]``.
    """
    raise NotImplementedError("sinusoidal_encoding: not implemented yet")


class LearnedPositionalEmbedding(nn.Module):
    """A learned positional embedding: one trainable vector per position ``0 … max_len−1``.

    Submodules, exactly this one and no other parameters:
        pos: ``nn.Embedding(max_len, d_model)`` (row ``p`` is the vector of position ``p``)

    Unlike the sinusoidal table, it has no vector for a position ``>= max_len``. Buffers
    of your own (``register_buffer``, e.g. position ids) are not parameters: the grader
    keeps them when it loads weights with ``load_state_dict``.
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        """Create ``self.pos`` as described in the class docstring."""
        super().__init__()
        raise NotImplementedError("LearnedPositionalEmbedding.__init__: not implemented yet")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Add the embeddings of positions ``0 … n−1`` to ``x``.

        Args:
            x: ``(B, n, d_model)`` token embeddings (any batch size ``B``).

        Returns:
            ``x + pos(arange(n))``, shape ``(B, n, d_model)``: position ``t`` of every
            sequence gets row ``t`` of ``pos.weight``. Differentiable with respect to ``x``
            and ``pos.weight``; ``x`` is not modified. (After ``.double()`` the module and
            a float64 ``x`` give a float64 result, as for any ``nn.Module``.)

        Raises:
            ValueError: when ``n > max_len`` (the table has no row for those positions).
        """
        raise NotImplementedError("LearnedPositionalEmbedding.forward: not implemented yet")


def add_positional_encoding(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """Token embeddings plus positional encodings.

    Args:
        x: ``(..., n, d_model)`` token embeddings: ``(B, n, d_model)`` or ``(n, d_model)``
            (any number of leading dims).
        pe: ``(L, d_model)`` table with ``L >= n`` (e.g. from :func:`sinusoidal_encoding`);
            only its first ``n`` rows are used.

    Returns:
        ``x + pe[:n]``, broadcast over the leading dims: shape, dtype and device of ``x``
        (``pe`` is converted to them when it differs). Differentiable with respect to
        ``x`` and ``pe``; neither input is modified.

    Raises:
        ValueError: when ``n > L``.
    """
    raise NotImplementedError("add_positional_encoding: not implemented yet")


def make_copy_task(
    num_samples: int,
    seq_len: int,
    vocab_size: int,
    position: int,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token sequences labelled by the token at a fixed ``position``.

    Exactly (the grader compares the tensors):
    ``g = torch.Generator().manual_seed(seed)``;
    ``tokens = torch.randint(0, vocab_size, (num_samples, seq_len), generator=g)``;
    ``labels = tokens[:, position]`` as a copy (``.clone()``).

    Only a model that knows *where* each token is can solve it: the tokens themselves
    carry no hint of their position.

    Returns:
        ``(tokens, labels)``: ``(num_samples, seq_len)`` and ``(num_samples,)``, ``torch.long``.
    """
    raise NotImplementedError("make_copy_task: not implemented yet")


def extrapolation_experiment(
    train_len: int = 8,
    vocab_size: int = 8,
    d_model: int = 16,
    position: int = 1,
    steps: int = 80,
    seed: int = 0,
) -> dict[str, Optional[float]]:
    """Train on sequences of length ``n = train_len``, test on ``n`` and on ``2n``.

    Steps (use the given :class:`CopyModel`, :class:`SinusoidalPositions`, :func:`fit`
    and :func:`accuracy` below):

    1. Data with :func:`make_copy_task` and this ``vocab_size`` and ``position``: training
       set ``(256, n)`` from ``seed``, test sets ``(256, n)`` from ``seed + 1`` and
       ``(256, 2n)`` from ``seed + 2``.
    2. For ``kind`` in ``"sinusoidal"``, ``"learned"``: ``torch.manual_seed(seed)``, then
       a ``CopyModel(vocab_size, d_model, positions)`` with ``positions =
       SinusoidalPositions()`` or ``LearnedPositionalEmbedding(n, d_model)`` (its
       ``max_len`` is the training length), trained with ``fit(model, tokens, labels,
       steps)``.
    3. Its accuracy on the length-``n`` test set, and on the length-``2n`` one. A model
       that cannot process length ``2n`` at all (your learned embedding raises
       ``ValueError``) gets ``None`` there.

    Returns:
        ``{"sinusoidal_train": float, "sinusoidal_long": float | None,
        "learned_train": float, "learned_long": float | None}``, accuracies in ``[0, 1]``.
        A few seconds of CPU with the defaults.
    """
    raise NotImplementedError("extrapolation_experiment: not implemented yet")


def plot_encoding(
    pe: torch.Tensor,
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
) -> Figure:
    """Draw a positional encoding table as a heatmap.

    Args:
        pe: ``(max_len, d_model)`` tensor (possibly requiring grad) or NumPy array.
        ax: the axes to draw into; ``None``: a new figure with one axes.
        title: the axes' title, set only when given.

    Returns:
        The figure drawn into (``ax.figure`` when ``ax`` is given). The heatmap shows
        position ``p`` as row ``p`` counted **from the top** and dimension ``j`` as column
        ``j`` counted **from the left**; the x label contains "dimension", the y label
        contains "position"; colour limits ``-1`` and ``1`` (whatever the data's range);
        a colorbar. Any drawing primitive that shows a matrix is fine (``imshow``,
        ``matshow``, ``pcolormesh`` with an inverted y axis, …).
    """
    raise NotImplementedError("plot_encoding: not implemented yet")


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
