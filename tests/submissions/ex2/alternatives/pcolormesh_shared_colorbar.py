"""Exercise 2 — Visualising attention weights.

An attention matrix ``weights[i, j]`` says how much query token ``i`` looks at key
token ``j``. Drawn as a heatmap it shows at a glance what each token attends to.

Conventions used throughout (they are also what the grader checks):

* ``weights`` may be a NumPy array or a torch tensor. A tensor may require grad, be
  float32/float64 and so on: turn it into a NumPy array first (``.detach().cpu()``)
  and never modify the caller's ``weights``.
* Heatmap layout: query token ``i`` is row ``i`` counted **from the top**, key token
  ``j`` is column ``j`` counted **from the left** (what ``imshow``/``matshow`` do by
  default). One tick per token, labelled with the token text.
* Colour limits are fixed to 0 and 1 (weights are probabilities), so that plots are
  comparable.
* Any drawing primitive that shows a matrix is fine (``imshow``, ``matshow``,
  ``pcolormesh`` with an inverted y axis, ...): the grader reads what is displayed.
* Do not call ``plt.show()`` and do not change the matplotlib backend: return the
  axes / figure and let the caller (a notebook, a script, the grader) display it.
* This file must be self-contained: import only the standard library, ``numpy``,
  ``torch`` and ``matplotlib``.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    # pcolormesh draws row 0 at the bottom: invert the y axis so query 0 is on top.
    if torch.is_tensor(weights):
        weights = weights.detach().cpu().numpy()
    w = np.array(weights, dtype=float)
    if ax is None:
        fig = plt.figure()
        ax = fig.add_subplot(1, 1, 1)
    mesh = ax.pcolormesh(w, cmap=cmap, vmin=0, vmax=1)
    ax.invert_yaxis()
    ax.set_xticks(np.arange(w.shape[1]) + 0.5)
    ax.set_xticklabels(key_tokens, rotation=90)
    ax.set_yticks(np.arange(w.shape[0]) + 0.5)
    ax.set_yticklabels(query_tokens)
    ax.set_xlabel("Keys (attended to)")
    ax.set_ylabel("Query (attending)")
    if title:
        ax.set_title(title)
    plt.colorbar(mesh, ax=ax)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    h = len(weights)
    cols = min(h, ncols)
    rows = -(-h // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3 * rows), squeeze=False,
                             constrained_layout=True)
    for idx, ax in enumerate(axes.flat):
        if idx >= h:
            ax.axis("off")
            continue
        w = weights[idx]
        if torch.is_tensor(w):
            w = w.detach().numpy()
        mesh = ax.pcolormesh(np.asarray(w), cmap="viridis", vmin=0, vmax=1)
        ax.invert_yaxis()
        ax.set_xticks(np.arange(len(tokens)) + 0.5, tokens, rotation=90)
        ax.set_yticks(np.arange(len(tokens)) + 0.5, tokens)
        ax.set_xlabel("Key")
        ax.set_ylabel("Query")
        ax.set_title("Head %d" % (idx + 1))
    fig.colorbar(mesh, ax=axes, shrink=0.8)          # one shared colorbar
    if title is not None:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    if torch.is_tensor(weights):
        weights = weights.detach().tolist()
    rows = np.asarray(weights).tolist()
    out = []
    for row in rows:
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        out.append([key_tokens[j] for j in order[:k]])
    return out
