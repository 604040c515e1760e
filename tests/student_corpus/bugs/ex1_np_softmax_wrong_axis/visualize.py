"""Exercise 2 — Visualising attention weights (student solution)."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def _to_numpy(weights):
    if isinstance(weights, torch.Tensor):
        return weights.detach().cpu().numpy().copy()
    return np.array(weights, copy=True)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    w = _to_numpy(weights)
    if ax is None:
        _, ax = plt.subplots()
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_tokens)))
    ax.set_xticklabels(list(key_tokens), rotation=45)
    ax.set_yticks(range(len(query_tokens)))
    ax.set_yticklabels(list(query_tokens))
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(im, ax=ax)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    w = _to_numpy(weights)
    h = w.shape[0]
    cols = min(h, ncols)
    rows = math.ceil(h / ncols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 4 * rows), squeeze=False)
    for i in range(rows * cols):
        ax = axes[i // cols][i % cols]
        if i < h:
            plot_attention(w[i], tokens, tokens, ax=ax, title=f"Head {i + 1}")
        else:
            ax.set_visible(False)
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    w = _to_numpy(weights)
    result = []
    for row in w:
        order = np.argsort(-row, kind="stable")[:k]
        result.append([key_tokens[j] for j in order])
    return result
