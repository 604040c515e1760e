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
    if hasattr(weights, "detach"):
        weights = weights.detach().numpy()
    w = np.array(weights, dtype=np.float32)
    n, m = w.shape
    if ax is None:
        fig, ax = plt.subplots()
    # origin="lower" puts row 0 at y = 0; flipping the y limits brings it back to the top.
    im = ax.imshow(w, origin="lower", cmap=cmap, interpolation="nearest")
    im.set_clim(0, 1)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xticks(range(m))
    ax.set_xticklabels([str(t) for t in key_tokens])
    ax.set_yticks(range(n))
    ax.set_yticklabels([str(t) for t in query_tokens])
    ax.set(xlabel="Key position", ylabel="Query position")
    if title is not None:
        ax.set_title(title)
    ax.get_figure().colorbar(im)
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    h = weights.shape[0]
    nrows, ncols = (h + ncols - 1) // ncols, min(h, ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False)
    for i in range(nrows * ncols):
        ax = axes[i // ncols][i % ncols]
        if i < h:
            plot_attention(weights[i], tokens, tokens, ax=ax, title=f"Head {i+1}")
        else:
            fig.delaxes(ax)                             # spare cell removed
    if title is not None:
        plt.suptitle(title)
    return fig


def top_attended(weights, key_tokens, k=1):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach()
    else:
        weights = torch.from_numpy(np.asarray(weights))
    result = []
    for row in weights:
        picked = []
        values = row.clone().double()
        for _ in range(k):
            j = int(torch.argmax(values))               # first maximum: the lower index
            picked.append(key_tokens[j])
            values[j] = -float("inf")
        result.append(picked)
    return result
