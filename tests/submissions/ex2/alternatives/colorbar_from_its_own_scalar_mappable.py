"""plot_attention draws its colorbar from a ScalarMappable of its own (Normalize(0, 1), the same
colormap), not from the image: the heatmap's scale all the same."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def plot_attention(
    weights: ArrayLike,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
    cmap: str = "viridis",
) -> Axes:
    """Draw one attention matrix as a heatmap.

    Args:
        weights: shape ``(n, m)``, NumPy array or torch tensor (possibly requiring
            grad); row ``i`` holds the weights of query token ``i`` over the keys.
            Not modified.
        query_tokens: ``n`` strings, one per row.
        key_tokens: ``m`` strings, one per column.
        ax: the axes to draw into. When ``None``, create a new figure with a single
            axes (``plt.subplots()``) and draw into that.
        title: the axes title; left unset when ``None``.
        cmap: a matplotlib colormap name.

    Returns:
        The axes drawn into (``ax`` itself when given).

    Requirements:
        * row ``i`` (from the top) is query token ``i``; column ``j`` (from the left)
          is key token ``j``;
        * y tick labels are ``query_tokens`` and x tick labels are ``key_tokens``,
          exactly one tick per token (rotating the x labels is fine);
        * the x label contains the word "Key" and the y label the word "Query";
        * colour limits are exactly 0 and 1;
        * a colorbar is attached to the heatmap;
        * no ``plt.show()``.
    """
    ### BEGIN SOLUTION
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().double().numpy()
    weights = np.asarray(weights, dtype=np.float64)             # (n, m)

    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.5 * len(key_tokens), 1 + 0.5 * len(query_tokens)))

    # imshow puts row 0 at the top and column 0 at the left.
    image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")

    ax.set_xticks(range(len(key_tokens)))
    ax.set_xticklabels(list(key_tokens), rotation=45, ha="right")
    ax.set_yticks(range(len(query_tokens)))
    ax.set_yticklabels(list(query_tokens))
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    if title is not None:
        ax.set_title(title)

    import matplotlib as mpl
    sm = mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(0, 1), cmap=cmap)
    ax.figure.colorbar(sm, ax=ax)
    return ax
    ### END SOLUTION


def plot_attention_heads(
    weights: ArrayLike,
    tokens: Sequence[str],
    ncols: int = 4,
    title: Optional[str] = None,
) -> Figure:
    """Draw the attention matrix of every head in a grid of heatmaps.

    Args:
        weights: shape ``(h, n, n)`` (self-attention: the same ``n`` tokens are the
            queries and the keys), NumPy array or torch tensor (possibly requiring
            grad). Not modified.
        tokens: ``n`` strings, used for both the rows and the columns.
        ncols: maximum number of heatmaps per grid row.
        title: the figure's suptitle; left unset when ``None``.

    Returns:
        A new figure whose grid has ``ceil(h / ncols)`` rows and ``min(h, ncols)``
        columns. Head ``i`` is drawn in cell ``i`` in row-major order (left to right,
        then top to bottom), titled ``"Head {i+1}"`` (``"Head 1"`` for the first head),
        with the same layout as :func:`plot_attention` (``tokens`` on both axes, "Key"
        / "Query" axis labels, colour limits 0 and 1). Either one colorbar per head or
        a single shared colorbar is fine. Unused cells of the last row are hidden
        (``ax.set_visible(False)`` or ``ax.axis("off")``). No ``plt.show()``.
    """
    ### BEGIN SOLUTION
    num_heads = weights.shape[0]
    nrows = math.ceil(num_heads / ncols)
    ncols = min(num_heads, ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.5 * nrows), squeeze=False)
    axes = axes.ravel()                                         # row-major order

    for i in range(num_heads):
        plot_attention(weights[i], tokens, tokens, ax=axes[i], title=f"Head {i + 1}")
    for ax in axes[num_heads:]:
        ax.set_visible(False)                                   # unused grid cells

    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
    ### END SOLUTION


def top_attended(
    weights: ArrayLike,
    key_tokens: Sequence[str],
    k: int = 1,
) -> list[list[str]]:
    """For each query row, the ``k`` key tokens it attends to most.

    Args:
        weights: shape ``(n, m)``, NumPy array or torch tensor (possibly requiring
            grad). Not modified.
        key_tokens: ``m`` strings, one per column.
        k: how many keys to return per query, ``1 <= k <= m``.

    Returns:
        A list of ``n`` lists; list ``i`` holds the ``k`` elements of ``key_tokens``
        with the largest weights in row ``i``, largest first. Ties (equal weights) go
        to the lower key index: among equal weights, the key that comes first in
        ``key_tokens`` is listed first. Example: a row ``[0.4, 0.2, 0.4]`` with
        ``k=2`` gives ``[key_tokens[0], key_tokens[2]]``.
    """
    ### BEGIN SOLUTION
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().double().numpy()
    weights = np.asarray(weights, dtype=np.float64)             # (n, m)

    result = []
    for row in weights:
        # A stable sort of -row keeps equal weights in key order: ties -> lower index.
        order = np.argsort(-row, kind="stable")[:k]
        result.append([key_tokens[j] for j in order])
    return result
    ### END SOLUTION
