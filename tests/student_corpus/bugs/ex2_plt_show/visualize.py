"""Exercise 2 — attention heatmaps (weights converted to float64 NumPy arrays first)."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def _to_f64(weights):
    if isinstance(weights, torch.Tensor):
        return weights.detach().cpu().double().numpy().copy()
    return np.asarray(weights, dtype=np.float64).copy()


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    W = _to_f64(weights)
    if ax is None:
        _fig, ax = plt.subplots(figsize=(1 + 0.6 * W.shape[1], 1 + 0.6 * W.shape[0]))
    image = ax.imshow(W, cmap=cmap, aspect="auto", interpolation="nearest")
    image.set_clim(0.0, 1.0)
    ax.set_xticks(np.arange(W.shape[1]))
    ax.set_yticks(np.arange(W.shape[0]))
    ax.set_xticklabels([str(t) for t in key_tokens], rotation=60)
    ax.set_yticklabels([str(t) for t in query_tokens])
    ax.set_xlabel("Key (attended to)")
    ax.set_ylabel("Query (attending)")
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="weight")
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    W = _to_f64(weights)
    h = W.shape[0]
    ncols_used = min(h, ncols)
    nrows = math.ceil(h / ncols)
    fig = plt.figure(figsize=(4 * ncols_used, 3.6 * nrows))
    for i in range(nrows * ncols_used):
        ax = fig.add_subplot(nrows, ncols_used, i + 1)
        if i < h:
            plot_attention(W[i], tokens, tokens, ax=ax, title=f"Head {i + 1}")
        else:
            ax.set_visible(False)
    if title is not None:
        fig.suptitle(title)
    plt.show()
    return fig


def top_attended(weights, key_tokens, k=1):
    W = _to_f64(weights)
    out = []
    for row in W:
        pairs = sorted(range(len(row)), key=lambda j: (-row[j], j))
        out.append([key_tokens[j] for j in pairs[:k]])
    return out
