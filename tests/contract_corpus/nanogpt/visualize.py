"""Exercise 2: visualising attention weights (plain matplotlib ``imshow``)."""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def _to_numpy(weights):
    if isinstance(weights, torch.Tensor):
        return weights.detach().cpu().numpy()
    return np.asarray(weights)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    """Heatmap of ``weights (n, m)``: query i is row i from the top, key j column j."""
    w = _to_numpy(weights)
    if ax is None:
        fig, ax = plt.subplots()
    else:
        fig = ax.figure
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_tokens)))
    ax.set_xticklabels(key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)))
    ax.set_yticklabels(query_tokens)
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    fig.colorbar(im, ax=ax)
    if title is not None:
        ax.set_title(title)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    """One heatmap per head of ``weights (h, n, n)`` on a row-major grid."""
    w = _to_numpy(weights)
    h = w.shape[0]
    cols = min(h, ncols)
    rows = math.ceil(h / ncols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 4 * rows), squeeze=False)
    axes = axes.flatten()
    for i in range(h):
        plot_attention(w[i], tokens, tokens, ax=axes[i], title=f"Head {i+1}")
    for ax in axes[h:]:
        ax.set_visible(False)
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    """For each query row, the ``k`` most attended key tokens, largest first."""
    w = _to_numpy(weights)
    order = np.argsort(-w, axis=-1, kind="stable")[:, :k]   # stable: ties -> lower index
    return [[key_tokens[j] for j in row] for row in order]
