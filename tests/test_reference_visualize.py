"""The ex2 oracle: what its heatmaps display (read straight from matplotlib and through
the inspector) and top_attended against a brute-force loop."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from reference import visualize as ref  # noqa: E402

QUERIES = ["the", "cat", "sat"]
KEYS = ["a", "b", "c", "d", "e"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _weights(n=3, m=5, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, m))
    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)


def test_reexports_inspector():
    from autograder.support import figures
    assert ref.describe_axes is figures.describe_axes and ref.describe_figure is figures.describe_figure


@pytest.mark.parametrize("as_tensor", [False, True])
def test_plot_attention_layout(as_tensor):
    w = _weights()
    given = torch.tensor(w, requires_grad=True) if as_tensor else w
    ax = ref.plot_attention(given, QUERIES, KEYS, title="Layer 1")
    # straight from matplotlib: imshow with origin "upper" shows row 0 on top
    (image,) = ax.images
    assert image.origin == "upper"
    np.testing.assert_allclose(np.asarray(image.get_array()), w)
    # through the inspector
    d = ref.describe_axes(ax)
    np.testing.assert_allclose(np.array(d["matrix"]), w)
    assert d["xticklabels"] == KEYS and d["yticklabels"] == QUERIES
    assert "Key" in d["xlabel"] and "Query" in d["ylabel"]
    assert d["title"] == "Layer 1" and d["clim"] == [0.0, 1.0] and d["has_colorbar"]
    assert d["cmap"] == "viridis"


def test_plot_attention_into_given_axes_and_inputs_untouched():
    fig, (left, right) = plt.subplots(1, 2)
    w = _weights(2, 2)
    before = w.copy()
    assert ref.plot_attention(w, ["x", "y"], ["u", "v"], ax=right, cmap="magma") is right
    assert not left.images and right.images
    assert ref.describe_axes(right)["cmap"] == "magma" and ref.describe_axes(right)["title"] == ""
    np.testing.assert_array_equal(w, before)


@pytest.mark.parametrize("h,ncols", [(1, 4), (4, 4), (5, 4), (6, 3), (3, 2)])
def test_plot_attention_heads_grid(h, ncols):
    tokens = ["t0", "t1", "t2"]
    w = np.stack([_weights(3, 3, seed=s) for s in range(h)])
    fig = ref.plot_attention_heads(torch.tensor(w), tokens, ncols=ncols, title="Heads")
    f = ref.describe_figure(fig)
    rows, cols = math.ceil(h / ncols), min(h, ncols)
    assert f["grid"] == [rows, cols] and f["suptitle"] == "Heads"
    assert len(f["axes"]) == rows * cols
    for cell, a in enumerate(f["axes"]):
        assert (a["row"], a["col"]) == divmod(cell, cols)
        if cell < h:
            assert a["visible"] and a["title"] == f"Head {cell + 1}"
            np.testing.assert_allclose(np.array(a["matrix"]), w[cell])
            assert a["xticklabels"] == tokens and a["yticklabels"] == tokens
            assert a["clim"] == [0.0, 1.0] and a["has_colorbar"]
        else:
            assert not a["visible"]
    assert ref.describe_figure(ref.plot_attention_heads(w, tokens))["suptitle"] == ""


def _top_loops(w, keys, k):
    result = []
    for row in w:
        remaining = list(range(len(row)))
        chosen = []
        for _ in range(k):
            best = remaining[0]
            for j in remaining:                         # strict > keeps the lowest index on ties
                if row[j] > row[best]:
                    best = j
            chosen.append(keys[best])
            remaining.remove(best)
        result.append(chosen)
    return result


@pytest.mark.parametrize("k", [1, 2, 5])
def test_top_attended_matches_loop_with_ties(k):
    w = np.array([[0.2, 0.2, 0.2, 0.2, 0.2],
                  [0.1, 0.4, 0.1, 0.4, 0.0],
                  [0.0, 0.0, 0.3, 0.3, 0.4]])
    assert ref.top_attended(w, KEYS, k=k) == _top_loops(w, KEYS, k)
    assert ref.top_attended(torch.tensor(w, requires_grad=True), KEYS, k=k) == _top_loops(w, KEYS, k)
    rand = _weights(4, 5, seed=9)
    assert ref.top_attended(rand, KEYS, k=k) == _top_loops(rand, KEYS, k)


def test_top_attended_by_hand():
    w = np.array([[0.1, 0.4, 0.1, 0.4, 0.0]])
    assert ref.top_attended(w, KEYS) == [["b"]]
    assert ref.top_attended(w, KEYS, k=3) == [["b", "d", "a"]]
