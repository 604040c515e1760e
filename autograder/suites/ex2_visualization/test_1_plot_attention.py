"""ex2 · plot_attention: the heatmap as displayed (orientation, ticks, labels, colours)."""
from __future__ import annotations

import pytest

from autograder.suites.ex2_visualization.causes import Ex2Cause
from autograder.suites.checks import fail
from autograder.suites.ex2_visualization.common import (expect_axis_labels, expect_clim,
                                                         expect_finite_heatmap, expect_matrix,
                                                         expect_ticks, expect_types, got_axes)

pytestmark = pytest.mark.covers("plot_attention")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/signature", "plot_attention/ax")
def test_returns_axes(plain):
    """plot_attention returns the matplotlib Axes it drew into"""
    expect_types(plain["types"], "Axes", "plot_attention")
    expect_finite_heatmap(got_axes(plain), "plot_attention(weights (3, 5), …)")


@pytest.mark.points(3.5)
@pytest.mark.contract("plot_attention/orientation")
def test_orientation(plain):
    """heatmap shows query i as row i from the top and key j as column j from the left"""
    info = got_axes(plain)
    expect_matrix(info, plain["weights"], "plot_attention(weights (3, 5), …)")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/orientation")
def test_orientation_more_queries_than_keys(titled):
    """heatmap orientation also holds with more queries than keys"""
    info = got_axes(titled)
    expect_matrix(info, titled["weights"], "plot_attention(weights (4, 2), …)")


@pytest.mark.points(2.5)
@pytest.mark.contract("plot_attention/ticks")
def test_ticks(plain):
    """one tick per token: queries on the y axis top to bottom, keys on the x axis left to right"""
    info = got_axes(plain)
    expect_ticks(info, plain["queries"], plain["keys"], "plot_attention(weights (3, 5), …)")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/labels")
def test_axis_labels(plain):
    """x axis label contains "Key" and y axis label contains "Query\""""
    expect_axis_labels(got_axes(plain), "plot_attention")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/colorbar")
def test_colorbar(plain):
    """a colorbar shows the heatmap's scale"""
    info = got_axes(plain)
    if not info.get("has_colorbar"):
        fail("plot_attention: no colorbar shows the heatmap's scale "
             "(keep what imshow returns and call fig.colorbar(image, ax=ax))",
             cause=Ex2Cause.NO_COLORBAR)


@pytest.mark.points(1.5)
@pytest.mark.contract("plot_attention/clim")
def test_colour_limits(plain):
    """colour limits are fixed to 0 and 1"""
    expect_clim(got_axes(plain), "plot_attention")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/title")
@pytest.mark.covers("plot_attention:args/title")
def test_title(plain, titled):
    """the title is set when given"""
    got = got_axes(titled).get("title") or ""
    if got != titled["title"]:
        fail(f"plot_attention(…, title=…): the axes title should be the given text; "
             f"got {got[:80]!r}")


@pytest.mark.note("The contract says the title is set when given and says nothing when it is not: a "
                  "default title is correct by it. An axes titled 'None' is seldom what anyone meant.")
def test_no_title_when_none(plain):
    """the title is left unset when title=None"""
    got = got_axes(plain).get("title") or ""
    if got.strip() == "None":
        fail("plot_attention(…) without a title shows the title 'None': only call "
             "ax.set_title(title) when title is not None",
             cause=Ex2Cause.TITLE_NONE_SHOWN)
    if got.strip():
        fail(f"plot_attention(…) without a title: the axes title should be left unset, got {got[:80]!r}",
             cause=Ex2Cause.DEFAULT_TITLE)


@pytest.mark.points(0.5)
@pytest.mark.contract("plot_attention/signature")
@pytest.mark.covers("plot_attention:args/cmap")
def test_cmap(plain, titled):
    """the cmap argument chooses the colormap (default "viridis")"""
    got = got_axes(titled).get("cmap")
    if got != "magma":
        fail(f"plot_attention(…, cmap=\"magma\"): the heatmap uses colormap {got!r}; "
             "pass cmap on to imshow / pcolormesh",
             cause=Ex2Cause.CMAP_IGNORED)
    got = got_axes(plain).get("cmap")
    if got != "viridis":
        fail(f"plot_attention(…) without cmap should use \"viridis\"; got {got!r}")


@pytest.mark.points(2.5)
@pytest.mark.contract("plot_attention/ax")
@pytest.mark.covers("plot_attention:args/ax")
def test_draws_into_given_ax(into_given_ax):
    """draws into the given ax and returns that same axes"""
    d = into_given_ax
    info = d["info"]
    if info.get("matrix") is None:
        other = "" if d["left"].get("matrix") is None else " (it drew into a different axes of the figure)"
        fail("plot_attention(…, ax=ax): nothing was drawn into the given ax" + (other or
             ": draw with ax.imshow(…) rather than plt.imshow(…) or a new figure"),
             cause=Ex2Cause.GIVEN_AX_IGNORED)
    expect_matrix(info, d["weights"], "plot_attention(…, ax=ax)")
    if d["left"].get("matrix") is not None:
        fail("plot_attention(…, ax=ax) also drew into another axes of the figure")
    if not d["same"]:
        fail("plot_attention(…, ax=ax) should return the ax it was given")


@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/ax")
@pytest.mark.covers("plot_attention:args/ax")
def test_draws_into_a_new_figure_without_ax(over_an_open_figure):
    """without ax, draws into a new figure (not into a figure that is already open)"""
    d = over_an_open_figure
    if d["same_figure"] or d["before"].get("matrix") is not None:
        fail("plot_attention(…) without ax drew into the figure that was already open (pyplot's "
             "current figure): without ax it must make a new figure, e.g. fig, ax = plt.subplots()",
             cause=Ex2Cause.CURRENT_FIGURE_REUSED)
    expect_matrix(d["info"], d["weights"], "plot_attention(…) without ax, another figure being open")


@pytest.mark.points(2)
@pytest.mark.contract("plot_attention/weights")
def test_tensor_requiring_grad(from_tensor):
    """accepts a torch tensor that requires grad"""
    info = got_axes(from_tensor)
    expect_matrix(info, from_tensor["weights"],
                  "plot_attention(torch tensor (3, 5) with requires_grad=True, …)")
