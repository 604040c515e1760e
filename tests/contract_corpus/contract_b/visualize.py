"""ex2: attention heatmaps with pcolormesh (cell centres, inverted y axis); the heads
figure shares one colorbar."""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def _array(weights):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().to("cpu", torch.float64).numpy()
    return np.asarray(weights, dtype=np.float64)


def _heatmap(ax, data, row_labels, col_labels, cmap):
    n, m = data.shape
    mesh = ax.pcolormesh(np.arange(m), np.arange(n), data, shading="nearest",
                         cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xlim(-0.5, m - 0.5)
    ax.set_ylim(n - 0.5, -0.5)          # row 0 at the top
    ax.set_xticks(list(range(m)), labels=list(col_labels), rotation=45, ha="right")
    ax.set_yticks(list(range(n)), labels=list(row_labels))
    ax.set_xlabel("Key position")
    ax.set_ylabel("Query position")
    return mesh


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    data = _array(weights)
    if ax is None:
        ax = plt.figure().add_subplot()
    mesh = _heatmap(ax, data, query_tokens, key_tokens, cmap)
    ax.figure.colorbar(mesh, ax=ax)
    if title:
        ax.set_title(title)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    data = _array(weights)
    h = data.shape[0]
    rows, cols = math.ceil(h / ncols), min(h, ncols)
    fig, grid = plt.subplots(rows, cols, figsize=(3.5 * cols + 1, 3.5 * rows), squeeze=False,
                             layout="constrained")
    mesh = None
    for r in range(rows):
        for c in range(cols):
            ax = grid[r][c]
            i = r * cols + c
            if i >= h:
                ax.set_visible(False)
                continue
            mesh = _heatmap(ax, data[i], tokens, tokens, "viridis")
            ax.set_title(f"Head {i + 1}")
    fig.colorbar(mesh, ax=[a for a in grid.ravel() if a.get_visible()])
    if title:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    data = _array(weights)
    out = []
    for row in data:
        chosen = []
        remaining = list(range(len(row)))
        for _ in range(min(k, len(row))):
            best = remaining[0]
            for j in remaining[1:]:
                if row[j] > row[best]:      # strict: on ties the lower index stays
                    best = j
            chosen.append(key_tokens[best])
            remaining.remove(best)
        out.append(chosen)
    return out
