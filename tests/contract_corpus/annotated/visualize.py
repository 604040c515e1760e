"""Exercise 2: visualising attention weights.

The Annotated Transformer draws attention with ``seaborn.heatmap(data, xticklabels=x,
yticklabels=y, square=True, vmin=0.0, vmax=1.0, ax=ax)``. Seaborn is not allowed here, so
this does what seaborn's heatmap does underneath: ``pcolormesh`` on cell edges, tick
labels at the cell centres, and the y axis inverted so row 0 is at the top.
"""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def _as_array(weights):
    if torch.is_tensor(weights):
        weights = weights.detach().cpu().numpy()
    return np.asarray(weights, dtype=float)


def draw(data, x, y, ax, cmap="viridis"):
    "A seaborn-style heatmap: pcolormesh, centred ticks, row 0 on top."
    n, m = data.shape
    mesh = ax.pcolormesh(np.arange(m + 1), np.arange(n + 1), data, cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xlim(0, m)
    ax.set_ylim(0, n)
    ax.invert_yaxis()
    ax.set_aspect("equal")                      # square=True
    ax.set_xticks(np.arange(m) + 0.5)
    ax.set_xticklabels(x, rotation=90)
    ax.set_yticks(np.arange(n) + 0.5)
    ax.set_yticklabels(y, rotation=0)
    return mesh


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    data = _as_array(weights)
    if ax is None:
        fig, ax = plt.subplots(1, 1, figsize=(6, 6))
    mesh = draw(data, key_tokens, query_tokens, ax, cmap=cmap)
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    ax.figure.colorbar(mesh, ax=ax)
    if title is not None:
        ax.set_title(title)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    data = _as_array(weights)
    h = data.shape[0]
    nrows, nc = math.ceil(h / ncols), min(h, ncols)
    fig, axs = plt.subplots(nrows, nc, figsize=(5 * nc, 5 * nrows), squeeze=False)
    for i, ax in enumerate(axs.flat):
        if i < h:
            plot_attention(data[i], tokens, tokens, ax=ax, title=f"Head {i+1}")
        else:
            ax.axis("off")
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    data = _as_array(weights)
    result = []
    for row in data:
        # sort by (-weight, index): largest first, ties to the lower key index
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        result.append([key_tokens[j] for j in order[:k]])
    return result
