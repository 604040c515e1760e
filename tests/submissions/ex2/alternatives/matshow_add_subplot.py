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


def _as_numpy(weights):
    if isinstance(weights, torch.Tensor):
        return weights.detach().to("cpu", torch.float64).numpy()
    return np.asarray(weights)


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    w = _as_numpy(weights)
    if ax is None:
        ax = plt.figure(figsize=(5, 4)).gca()
    im = ax.matshow(w, cmap=plt.get_cmap(cmap), vmin=0.0, vmax=1.0)   # x tick labels on top
    ax.set_xticks(list(range(len(key_tokens))), labels=key_tokens)
    ax.set_yticks(list(range(len(query_tokens))), labels=query_tokens)
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("Key tokens")
    ax.set_ylabel("Query tokens")
    if title is not None:
        ax.set_title(title, pad=20)
    cb = plt.colorbar(im, ax=ax, fraction=0.046)
    cb.set_label("attention weight")
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    w = _as_numpy(weights)
    h = w.shape[0]
    ncols = min(ncols, h)
    nrows = math.ceil(h / ncols)
    fig = plt.figure(figsize=(4 * ncols, 4 * nrows))
    for i in range(h):
        ax = fig.add_subplot(nrows, ncols, i + 1)      # spare cells are never created
        plot_attention(w[i], tokens, tokens, ax=ax, title="Head " + str(i + 1))
    if title:
        fig.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    w = torch.as_tensor(_as_numpy(weights))
    # torch.sort(stable=True) on -w keeps equal weights in key order
    idx = torch.sort(-w, dim=-1, stable=True).indices[:, :k]
    return [[key_tokens[j] for j in row] for row in idx.tolist()]
