"""Exercise 2 — attention heatmaps with pcolormesh."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def _numpy_copy(weights):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu()
        return weights.numpy().copy()
    return np.array(weights)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    w = _numpy_copy(weights)
    n, m = w.shape
    if ax is None:
        fig, ax = plt.subplots()
    mesh = ax.pcolormesh(np.arange(m + 1) - 0.5, np.arange(n + 1) - 0.5, w,
                         cmap=cmap, vmin=0.0, vmax=1.0, shading="flat")
    ax.set_xlim(-0.5, m - 0.5)
    ax.set_ylim(n - 0.5, -0.5)          # row 0 at the top
    ax.set_aspect("equal")
    xt, xl = [], []
    for j in range(m):
        xt.append(j)
        xl.append(str(key_tokens[j]))
    yt, yl = [], []
    for i in range(n):
        yt.append(i)
        yl.append(str(query_tokens[i]))
    ax.set_xticks(xt)
    ax.set_xticklabels(xl, rotation=30, ha="right")
    ax.set_yticks(yt)
    ax.set_yticklabels(yl)
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    if title is not None:
        ax.set_title(title)
    ax.get_figure().colorbar(mesh, ax=ax)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    w = _numpy_copy(weights)
    h = w.shape[0]
    n_cols = min(h, ncols)
    n_rows = math.ceil(h / ncols)
    fig, grid = plt.subplots(n_rows, n_cols, squeeze=False,
                             figsize=(3 * n_cols + 1, 3 * n_rows))
    for r in range(n_rows):
        for c in range(n_cols):
            i = r * n_cols + c
            if i < h:
                plot_attention(w[i], tokens, tokens, ax=grid[r, c], title="Head " + str(i + 1))
            else:
                grid[r, c].set_visible(False)
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    w = _numpy_copy(weights)
    answer = []
    for i in range(w.shape[0]):
        remaining = list(range(w.shape[1]))
        chosen = []
        for _ in range(k):
            best = remaining[0]
            for j in remaining:
                if w[i, j] > w[i, best]:     # strict: the lower index keeps ties
                    best = j
            chosen.append(key_tokens[best])
            remaining.remove(best)
        answer.append(chosen)
    return answer
