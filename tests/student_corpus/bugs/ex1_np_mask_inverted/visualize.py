"""Exercise 2 — attention heatmaps (matshow version)."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def _as_array(w):
    if torch.is_tensor(w):
        w = w.detach().cpu().to(torch.float64).numpy()
    return np.array(w, dtype=np.float64)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    data = _as_array(weights)
    if ax is None:
        fig, ax = plt.subplots()
    img = ax.matshow(data, cmap=cmap, vmin=0, vmax=1)
    ax.set_xticks(np.arange(len(key_tokens)), labels=list(key_tokens), rotation=90)
    ax.set_yticks(np.arange(len(query_tokens)), labels=list(query_tokens))
    ax.xaxis.set_ticks_position("bottom")
    ax.set_xlabel("Key tokens")
    ax.set_ylabel("Query tokens")
    if title is not None:
        ax.set_title(title)
    plt.colorbar(img, ax=ax, fraction=0.046)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    data = _as_array(weights)
    n_heads = data.shape[0]
    ncol = min(n_heads, ncols)
    nrow = -(-n_heads // ncols)
    fig = plt.figure(figsize=(3.5 * ncol, 3.5 * nrow))
    axs = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for idx, ax in enumerate(axs):
        if idx >= n_heads:
            ax.axis("off")
            continue
        plot_attention(data[idx], tokens, tokens, ax=ax, title="Head {}".format(idx + 1))
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    data = _as_array(weights)
    out = []
    for row in data:
        # lexsort: last key is primary -> sort by -weight, then by index
        idx = np.lexsort((np.arange(row.size), -row))[:k]
        out.append([key_tokens[int(j)] for j in idx])
    return out
