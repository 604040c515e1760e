"""ex2 · the shape rules at their smallest sizes: one query, one key, one head, as many heads
as columns.

Students' crashes live there (``plt.subplots(1, 1)`` returns one Axes, not an array; a
``squeeze()`` that drops the only row; a grid with a spare column when ``h = ncols``)."""
from __future__ import annotations

import pytest

import reference.visualize as ref
from autograder.suites.checks import fail
from autograder.suites.ex2_visualization.common import expect_matrix, expect_ticks, got_axes, weights
from autograder.suites.ex2_visualization.test_2_plot_attention_heads import (_call, _figure, _head_axes,
                                                                             _visible, expect_grid)
from autograder.suites.ex2_visualization.test_3_top_attended import KEYS as TOP_KEYS


@pytest.mark.points(0.5)
@pytest.mark.contract("plot_attention/orientation", "plot_attention/ticks")
@pytest.mark.covers("plot_attention", "plot_attention:size/one query, one key")
def test_one_query_and_one_key(one_query, one_key):
    """plot_attention with one query (weights (1, m)) and with one key (weights (n, 1))"""
    for drawn in (one_query, one_key):
        n, m = drawn["weights"].shape
        what = f"plot_attention(weights ({n}, {m}), …)"
        info = got_axes(drawn)
        expect_matrix(info, drawn["weights"], what)
        expect_ticks(info, drawn["queries"], drawn["keys"], what)


@pytest.mark.points(0.5)
@pytest.mark.contract("plot_attention_heads/grid", "plot_attention_heads/titles")
@pytest.mark.covers("plot_attention_heads", "plot_attention_heads:size/one head")
def test_one_head(heads1):
    """one head: a 1 × 1 grid whose heatmap is titled "Head 1\""""
    expect_grid(heads1)
    (ax,) = _head_axes(heads1)
    expect_matrix(ax, heads1["weights"][0], f"{_call(heads1)}, head 1")
    if (ax.get("title") or "") != "Head 1":
        fail(f"{_call(heads1)}: the only heatmap should be titled \"Head 1\"; got {(ax.get('title') or '')[:40]!r}")


@pytest.mark.points(0.5)
@pytest.mark.contract("plot_attention_heads/grid", "plot_attention_heads/hidden")
@pytest.mark.covers("plot_attention_heads", "plot_attention_heads:size/h = ncols")
def test_as_many_heads_as_columns(heads3):
    """h = ncols: one full row of heatmaps, no spare cell"""
    expect_grid(heads3)
    for i, ax in enumerate(_head_axes(heads3)):
        expect_matrix(ax, heads3["weights"][i], f"{_call(heads3)}, head {i + 1}")
    shown = [ax for ax in _figure(heads3)["axes"] if _visible(ax)]
    if len(shown) != 3:
        fail(f"{_call(heads3)}: {len(shown)} axes are shown for 3 heads in 3 columns")


@pytest.mark.points(0.5)
@pytest.mark.contract("top_attended/largest-first")
@pytest.mark.covers("top_attended", "top_attended:size/one key")
def test_top_attended_one_key(student):
    """top_attended with one key (weights (n, 1)) gives that key for every query"""
    w = weights(3, 1, seed=80)
    got = student.visualize.top_attended(w, TOP_KEYS[:1], k=1)
    want = ref.top_attended(w, TOP_KEYS[:1], k=1)
    if got != want:
        fail(f"top_attended(weights (3, 1), key_tokens (1 token), k=1) should give one list of that token "
             f"per query row; got {str(got)[:120]}")
