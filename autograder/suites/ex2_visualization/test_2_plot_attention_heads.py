"""ex2 · plot_attention_heads: the grid of per-head heatmaps, as displayed."""
from __future__ import annotations

import math

import pytest

from autograder.jsontypes import JSONObject
from autograder.diagnosis.causes import Cause
from autograder.suites.ex2_visualization.causes import Ex2Cause
from autograder.suites.checks import fail
from autograder.suites.ex2_visualization.common import (expect_axis_labels, expect_clim,
                                                         expect_finite_heatmap, expect_matrix,
                                                         expect_ticks, expect_types)

pytestmark = pytest.mark.covers("plot_attention_heads")


def _figure(drawn: dict) -> dict:
    info = drawn.get("info")
    if info is None:
        fail("plot_attention_heads did not leave a figure the grader could find: return the "
             f"Figure (it returned a {drawn.get('types', ['?'])[0]})")
    return info


def _call(drawn: dict) -> str:
    h = drawn["weights"].shape[0]
    return f"plot_attention_heads(weights ({h}, 3, 3), ncols={drawn['ncols']})"


def _visible(ax: dict) -> bool:
    return bool(ax.get("visible")) and not ax.get("is_colorbar")


def _head_axes(drawn: dict) -> list[dict]:
    """The axes of head i, i = 0…h-1, found at cell i (row-major) of the figure's own grid.

    The figure's actual grid is used (a wrong grid shape only costs the grid tests); a
    figure without a grid is read in drawing order."""
    fig = _figure(drawn)
    h = drawn["weights"].shape[0]
    shown = [ax for ax in fig["axes"] if _visible(ax) and ax.get("matrix") is not None]
    if fig.get("grid") is None:
        if len(shown) < h:
            fail(f"{_call(drawn)}: expected {h} visible heatmaps, found {len(shown)}")
        return shown[:h]
    ncols = fig["grid"][1]
    by_cell = {}
    for ax in shown:
        if ax.get("row") is not None:
            by_cell.setdefault((ax["row"], ax["col"]), ax)
    heads = []
    for i in range(h):
        cell = (i // ncols, i % ncols)
        if cell not in by_cell:
            fail(f"{_call(drawn)}: no visible heatmap in grid cell (row {cell[0]}, column "
                 f"{cell[1]}), where head {i + 1} belongs (heads fill the grid row by row)")
        heads.append(by_cell[cell])
    return heads


def expect_grid(drawn: JSONObject) -> None:
    fig = _figure(drawn)
    h, ncols = drawn["weights"].shape[0], drawn["ncols"]
    want = [math.ceil(h / ncols), min(h, ncols)]
    if fig.get("grid") is None:
        fail(f"{_call(drawn)}: the figure has no grid of subplots (use plt.subplots(nrows, ncols))")
    if list(fig["grid"]) != want:
        fail(f"{_call(drawn)}: the grid should have ceil(h / ncols) = {want[0]} row(s) and "
             f"min(h, ncols) = {want[1]} column(s); got {fig['grid'][0]} × {fig['grid'][1]}",
             _grid_cause([int(x) for x in fig["grid"]], want, h, ncols))


def _grid_cause(got: list[int], want: list[int], h: int, ncols: int) -> Cause | None:
    """Rows and columns swapped, or ncols columns for fewer heads than ncols; else none known."""
    if got == want[::-1]:
        return Ex2Cause.GRID_SWAPPED
    if h < ncols and got[1] == ncols and got[0] == want[0]:
        return Ex2Cause.GRID_NCOLS_NOT_CAPPED
    return None


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention_heads/signature")
def test_returns_figure(heads5):
    """plot_attention_heads returns a matplotlib Figure"""
    expect_types(heads5["types"], "Figure", "plot_attention_heads")
    shown = [ax for ax in _figure(heads5)["axes"] if _visible(ax) and ax.get("matrix") is not None]
    if not shown:
        fail(f"{_call(heads5)}: the figure shows no heatmap")
    for i, ax in enumerate(shown):
        expect_finite_heatmap(ax, f"{_call(heads5)}, heatmap {i + 1}")


@pytest.mark.points(2)
@pytest.mark.contract("plot_attention_heads/grid")
@pytest.mark.covers("plot_attention_heads:args/ncols < h")
def test_grid_shape(heads5):
    """the grid has ceil(h / ncols) rows and min(h, ncols) columns"""
    expect_grid(heads5)
    for i, ax in enumerate(_head_axes(heads5)):
        expect_finite_heatmap(ax, f"{_call(heads5)}, head {i + 1}")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention_heads/grid")
def test_heads_fill_whole_rows(heads4):
    """h a multiple of ncols: ceil(h / ncols) rows, each full (no extra row)"""
    expect_grid(heads4)
    for i, ax in enumerate(_head_axes(heads4)):
        expect_matrix(ax, heads4["weights"][i], f"{_call(heads4)}, head {i + 1}")


@pytest.mark.points(1.5)
@pytest.mark.contract("plot_attention_heads/grid", "plot_attention_heads/layout")
@pytest.mark.covers("plot_attention_heads:args/ncols > h")
def test_fewer_heads_than_columns(heads2):
    """fewer heads than columns: one row of h heatmaps"""
    expect_grid(heads2)
    heads = _head_axes(heads2)
    for i, ax in enumerate(heads):
        expect_matrix(ax, heads2["weights"][i], f"{_call(heads2)}, head {i + 1}")


@pytest.mark.points(1.5)
@pytest.mark.contract("plot_attention_heads/titles", "plot_attention_heads/grid")
def test_head_titles(heads5):
    """head i is drawn in grid cell i (row-major) and titled "Head i+1\""""
    axes = _head_axes(heads5)
    titles = [ax.get("title") or "" for ax in axes]
    for i, got in enumerate(titles):
        if got != f"Head {i + 1}":
            zero = got == f"Head {i}"
            fail(f"{_call(heads5)}: the heatmap in cell {i} (row-major) should be titled "
                 f"\"Head {i + 1}\"; got {got[:40]!r}",
                 cause=Ex2Cause.HEADS_FROM_ZERO if zero else Ex2Cause.HEADS_COLUMN_MAJOR if _column_major(titles, _figure(heads5).get("grid")) else None)


def _column_major(titles: list[str], grid) -> bool:
    """Do the titles, read row by row, number the heads column by column?"""
    if not grid or len(grid) != 2:
        return False
    rows, cols = int(grid[0]), int(grid[1])
    want = [f"Head {(i % cols) * rows + i // cols + 1}" for i in range(len(titles))]
    return titles == want


@pytest.mark.points(3)
@pytest.mark.contract("plot_attention_heads/layout", "plot_attention/orientation")
def test_head_matrices(heads5):
    """every head's heatmap shows that head's weights, queries as rows from the top"""
    for i, ax in enumerate(_head_axes(heads5)):
        expect_matrix(ax, heads5["weights"][i], f"{_call(heads5)}, head {i + 1}")


@pytest.mark.points(1.5)
@pytest.mark.contract("plot_attention_heads/layout")
def test_head_layout(heads5):
    """every head has one tick per token on both axes and the Key / Query axis labels"""
    for i, ax in enumerate(_head_axes(heads5)):
        what = f"{_call(heads5)}, head {i + 1}"
        expect_ticks(ax, heads5["tokens"], heads5["tokens"], what)
        expect_axis_labels(ax, what)


@pytest.mark.points(1.5)
@pytest.mark.contract("plot_attention_heads/colours")
def test_head_colours(heads5):
    """every head uses colour limits 0 and 1, with a colorbar per head or one shared colorbar"""
    fig = _figure(heads5)
    for i, ax in enumerate(_head_axes(heads5)):
        expect_clim(ax, f"{_call(heads5)}, head {i + 1}")
    if not fig.get("n_colorbars"):
        fail(f"{_call(heads5)}: the figure has no colorbar (one per head or one shared "
             "colorbar, e.g. fig.colorbar(image, ax=axes))",
             cause=Ex2Cause.HEADS_NO_COLORBAR)


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention_heads/hidden")
def test_spare_cells_hidden(heads5):
    """unused grid cells are hidden"""
    fig = _figure(heads5)
    h = heads5["weights"].shape[0]
    ncols = (fig.get("grid") or [None, heads5["ncols"]])[1]
    for ax in fig["axes"]:
        row, col = ax.get("row"), ax.get("col")
        if row is None or ax.get("is_colorbar"):
            continue
        if row * ncols + col >= h and _visible(ax):
            fail(f"{_call(heads5)}: grid cell (row {row}, column {col}) has no head but its "
                 "empty axes is still shown: hide it with ax.set_visible(False) or ax.axis('off')",
                 cause=Ex2Cause.SPARE_CELLS_SHOWN)
    visible = [ax for ax in fig["axes"] if _visible(ax)]
    if len(visible) > h:
        fail(f"{_call(heads5)}: {len(visible)} axes are shown for {h} heads: hide the unused "
             "ones with ax.set_visible(False) or ax.axis('off')")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention_heads/suptitle")
@pytest.mark.covers("plot_attention_heads:args/title")
def test_suptitle(heads5):
    """the figure's suptitle is set when a title is given"""
    got = _figure(heads5).get("suptitle") or ""
    if got != heads5["title"]:
        fail(f"plot_attention_heads(…, title=…): the figure's suptitle should be the given text "
             f"(fig.suptitle(title)); got {got[:80]!r}",
             cause=Ex2Cause.NO_SUPTITLE)


@pytest.mark.note("The contract says the suptitle is set when a title is given and says nothing when "
                  "it is not. A suptitle reading 'None' is seldom what anyone meant.")
def test_no_suptitle_when_none(heads2):
    """title=None shows no suptitle reading None"""
    got = _figure(heads2).get("suptitle") or ""
    if got.strip() == "None":
        fail("plot_attention_heads(…) without a title shows the suptitle 'None': only call "
             "fig.suptitle(title) when title is not None")


@pytest.mark.note("The contract says which weights plot_attention takes (NumPy array or torch tensor, "
                  "possibly requiring grad) and says nothing of plot_attention_heads': a function for "
                  "NumPy weights only is correct by it. The contract could say \"weights as in "
                  "plot_attention\" here too.")
def test_heads_from_a_tensor(heads_tensor):
    """plot_attention_heads accepts a torch tensor that requires grad"""
    for i, ax in enumerate(_head_axes(heads_tensor)):
        expect_matrix(ax, heads_tensor["weights"][i], f"{_call(heads_tensor)}, head {i + 1}")
