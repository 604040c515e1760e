# -*- coding: utf-8 -*-
"""Exercise 2 — Visualising attention weights (Windows edition)."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Union[np.ndarray, torch.Tensor]


def _grab(weights):
	if torch.is_tensor(weights):
		return weights.detach().to("cpu").clone().numpy()
	return np.copy(np.asarray(weights))


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
	mat = _grab(weights)
	if ax is None:
		fig, ax = plt.subplots()
	else:
		fig = ax.get_figure()
	picture = ax.imshow(mat, cmap=plt.get_cmap(cmap), norm=plt.Normalize(vmin=0, vmax=1))
	ax.set_xticks(list(range(len(key_tokens))))
	ax.set_yticks(list(range(len(query_tokens))))
	ax.set_xticklabels(key_tokens)
	ax.set_yticklabels(query_tokens)
	plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
	ax.set_xlabel("Key")
	ax.set_ylabel("Query")
	if title:
		ax.set_title(title)
	fig.colorbar(picture, ax=ax)
	return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
	mats = _grab(weights)
	heads = len(mats)
	cols = min(heads, ncols)
	rows = (heads + ncols - 1) // ncols
	fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 4 * rows))
	axes = np.array(axes).reshape(-1)
	for number, ax in enumerate(axes):
		if number < heads:
			plot_attention(mats[number], tokens, tokens, ax=ax, title="Head %d" % (number + 1))
		else:
			ax.axis("off")
	if title is not None:
		fig.suptitle(title)
	return fig


def top_attended(weights, key_tokens, k=1):
	mat = _grab(weights)
	res = []
	for row in mat:
		t = torch.from_numpy(np.ascontiguousarray(row))
		order = torch.sort(t, descending=True, stable=True).indices[:k]
		res.append([key_tokens[i] for i in order.tolist()])
	return res
