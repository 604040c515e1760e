"""Exercise 2: visualising attention weights (plain style, as in the CS231n notebooks'
``imshow(..., interpolation='nearest')`` plots, a subplot grid indexed ``idx + 1`` and
``axis('off')``). The axes methods are used instead of the pyplot state machine so that
an ``ax`` from any figure can be drawn into."""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch


def _to_numpy(x):
    if torch.is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    w = _to_numpy(weights)
    if ax is None:
        plt.figure()
        ax = plt.gca()
    im = ax.imshow(w, cmap=cmap, interpolation="nearest")
    im.set_clim(0, 1)
    ax.figure.colorbar(im, ax=ax)
    ax.set_xticks(np.arange(len(key_tokens)))
    ax.set_xticklabels(key_tokens, rotation=90)
    ax.set_yticks(np.arange(len(query_tokens)))
    ax.set_yticklabels(query_tokens)
    ax.set_xlabel("Key")
    ax.set_ylabel("Query")
    if title is not None:
        ax.set_title(title)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    w = _to_numpy(weights)
    num_heads = w.shape[0]
    rows = int(math.ceil(num_heads / float(ncols)))
    cols = min(num_heads, ncols)
    fig = plt.figure(figsize=(4 * cols, 4 * rows))
    for idx in range(rows * cols):
        ax = fig.add_subplot(rows, cols, idx + 1)
        if idx < num_heads:
            plot_attention(w[idx], tokens, tokens, ax=ax, title="Head %d" % (idx + 1))
        else:
            ax.axis("off")
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    w = _to_numpy(weights)
    num_queries = w.shape[0]
    result = []
    for i in range(num_queries):
        # np.argsort is ascending; sort the negated row with a stable sort so that
        # equal weights keep the lower key index first
        idxs = np.argsort(-w[i], kind="mergesort")[:k]
        result.append([key_tokens[j] for j in idxs])
    return result
