"""Exercise 2 — Visualising attention weights."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def _to_numpy(weights) -> np.ndarray:
    if isinstance(weights, torch.Tensor):
        return weights.detach().cpu().numpy()
    return np.asarray(weights)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    """Heatmap of ``weights (n, m)``: query i is row i from the top, key j column j from the left."""
    w = _to_numpy(weights)
    if ax is None:
        _, ax = plt.subplots()

    im = ax.imshow(w, cmap=cmap, vmin=0, vmax=1)

    ax.set_xticks(range(len(key_tokens)))
    ax.set_xticklabels(key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)))
    ax.set_yticklabels(query_tokens)
    ax.set_xlabel("Key tokens")
    ax.set_ylabel("Query tokens")
    if title is not None:
        ax.set_title(title)

    ax.figure.colorbar(im, ax=ax)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    """One heatmap per head of ``weights (h, n, n)`` in a row-major grid."""
    w = _to_numpy(weights)
    h = w.shape[0]
    nrows = math.ceil(h / ncols)
    cols = min(h, ncols)

    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 4 * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i < h:
            plot_attention(w[i], tokens, tokens, ax=ax, title=f"Head {i + 1}")
        else:
            ax.set_visible(False)

    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def top_attended(weights, key_tokens, k=1):
    """For each query row, the ``k`` most attended key tokens, largest weight first."""
    w = _to_numpy(weights)
    result = []
    for row in w:
        # stable sort of the negated weights: ties keep the lower key index first
        order = np.argsort(-row, kind="stable")[:k]
        result.append([key_tokens[j] for j in order])
    return result
