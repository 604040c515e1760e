"""ex2 reference: heatmaps of attention weights, and the most-attended keys.

Layout of one heatmap (``plot_attention``): query token i is row i counted from the
TOP, key token j is column j counted from the LEFT; one tick per token; colour limits
fixed to [0, 1] so that heatmaps of different heads compare; a colorbar.

Figures are built on the Agg canvas directly (``matplotlib.figure.Figure``), never
through pyplot's global figure registry, so the grader can create many of them without
leaking memory and nothing ever tries to open a window.

``describe_axes`` / ``describe_figure`` (the kit's figure inspector) are re-exported so
that graders can read back what a figure displays.

matplotlib is imported where a figure is made, not with this module: the grader imports it
for :func:`top_attended` alone, and matplotlib's import (half a second of CPU) would be paid
by every grading of ex2 for nothing.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import torch

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_attention_heads", "top_attended",
           "describe_axes", "describe_figure"]


def __getattr__(name: str) -> Any:
    """``describe_axes`` / ``describe_figure``, imported (with matplotlib) on first use."""
    if name in ("describe_axes", "describe_figure"):
        from autograder.support import figures
        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _to_numpy(weights) -> np.ndarray:
    """NumPy float64 copy of a NumPy array or torch tensor (possibly requiring grad)."""
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().to(torch.float64).numpy()
    return np.array(weights, dtype=np.float64, copy=True)


def _new_figure(figsize: tuple[float, float]) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)                       # attaches itself as fig.canvas
    return fig


def plot_attention(
    weights,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "viridis",
) -> Axes:
    """Heatmap of attention weights.

    Args:
        weights: (n, m) NumPy array or torch tensor; row i = query i, column j = key j.
        query_tokens: n labels for the y axis (top to bottom).
        key_tokens: m labels for the x axis (left to right).
        ax: axes to draw into; a new figure is created when None.
        title: axes title, set when given.
        cmap: colormap name.

    Returns:
        The axes drawn into.
    """
    w = _to_numpy(weights)                                  # (n, m)
    n, m = w.shape
    if ax is None:
        ax = _new_figure((max(3.0, 0.5 * m + 2), max(2.5, 0.5 * n + 1.5))).add_subplot()
    # imshow with the default origin="upper" puts row 0 at the top.
    image = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", origin="upper")
    ax.set_xticks(range(m), [str(t) for t in key_tokens], rotation=90)
    ax.set_yticks(range(n), [str(t) for t in query_tokens])
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax)
    return ax


def plot_attention_heads(
    weights,
    tokens: Sequence[str],
    ncols: int = 4,
    title: str | None = None,
) -> Figure:
    """One heatmap per head, in a row-major grid of ceil(h / ncols) × min(h, ncols).

    Args:
        weights: (h, n, n) NumPy array or torch tensor.
        tokens: n labels, used on both axes.
        ncols: maximum number of columns.
        title: figure suptitle, set when given.

    Returns:
        The figure. Head i is drawn in cell (i // ncols, i % ncols), titled "Head {i+1}",
        with its own colorbar; unused cells are hidden.
    """
    w = _to_numpy(weights)                                  # (h, n, n)
    h = w.shape[0]
    ncols = min(h, ncols)
    nrows = math.ceil(h / ncols)
    fig = _new_figure((3.2 * ncols, 3.0 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)        # (nrows, ncols) array of Axes
    for i, ax in enumerate(axes.flat):
        if i < h:
            plot_attention(w[i], tokens, tokens, ax=ax, title=f"Head {i + 1}")
        else:
            ax.set_visible(False)                           # spare cell
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens: Sequence[str], k: int = 1) -> list[list[str]]:
    """For each query row, the ``k`` key tokens with the largest weights, largest first.

    Ties go to the lower key index: a *stable* sort of the negated weights keeps equal
    weights in key order.

    Args:
        weights: (n, m) NumPy array or torch tensor.
        key_tokens: m key labels.
        k: how many keys per row.

    Returns:
        n lists of k tokens.
    """
    w = _to_numpy(weights)                                  # (n, m)
    order = np.argsort(-w, axis=-1, kind="stable")[:, :k]   # (n, k) key indices
    return [[key_tokens[j] for j in row] for row in order.tolist()]
