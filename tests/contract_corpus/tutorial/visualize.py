"""Exercise 2: visualising attention weights.

After ``showAttention`` of the PyTorch "NLP From Scratch: Translation with a Sequence to
Sequence Network and Attention" tutorial: ``ax.matshow(attentions, cmap=...)``,
``fig.colorbar(cax)``, x tick labels rotated by 90 degrees. The tutorial's
``[''] + labels`` with ``MultipleLocator(1)`` trick is replaced by one fixed tick per token.
"""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    if ax is None:
        fig = plt.figure()
        ax = fig.add_subplot(111)
    fig = ax.figure
    cax = ax.matshow(weights, cmap=cmap, vmin=0, vmax=1)
    fig.colorbar(cax, ax=ax)

    # Set up axes: one tick per token
    ax.set_xticks(np.arange(len(key_tokens)))
    ax.set_xticklabels(key_tokens, rotation=90)
    ax.set_yticks(np.arange(len(query_tokens)))
    ax.set_yticklabels(query_tokens)
    ax.set_xlabel("Key tokens")
    ax.set_ylabel("Query tokens")
    if title is not None:
        ax.set_title(title)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    num_heads = weights.shape[0]
    nrows = math.ceil(num_heads / ncols)
    ncols = min(num_heads, ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 4 * nrows), squeeze=False)
    for i, ax in enumerate(axes.reshape(-1)):
        if i < num_heads:
            plot_attention(weights[i], tokens, tokens, ax=ax, title=f"Head {i + 1}")
        else:
            ax.set_visible(False)
    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def top_attended(weights, key_tokens, k=1):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu()
    else:
        weights = torch.as_tensor(np.asarray(weights))
    # a stable descending sort keeps equal weights in key order (lower index first)
    _, indices = torch.sort(weights, dim=-1, descending=True, stable=True)
    return [[key_tokens[j] for j in row[:k].tolist()] for row in indices]
