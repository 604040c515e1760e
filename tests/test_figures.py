"""The figure inspector reports what is displayed, whatever primitive drew it."""
from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from autograder.support import figures  # noqa: E402
from autograder.support.figures import describe_axes, describe_figure  # noqa: E402

# A non-square matrix with distinct entries, so any flip or transpose shows.
W = np.array([[0.10, 0.20, 0.30, 0.40],
              [0.05, 0.15, 0.25, 0.55],
              [0.90, 0.02, 0.03, 0.05]])
QUERIES = ["q0", "q1", "q2"]
KEYS = ["k0", "k1", "k2", "k3"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _imshow(ax):
    im = ax.imshow(W, vmin=0, vmax=1)
    ax.set_xticks(range(4), KEYS)
    ax.set_yticks(range(3), QUERIES)
    return im


def _imshow_lower_flipped(ax):
    # origin="lower" puts array row 0 at the bottom: give it the rows upside down.
    im = ax.imshow(W[::-1], origin="lower", vmin=0, vmax=1)
    ax.set_xticks(range(4), KEYS)
    ax.set_yticks(range(3), QUERIES[::-1])      # y = 0 is now the last query
    return im


def _imshow_lower_inverted(ax):
    im = ax.imshow(W, origin="lower", vmin=0, vmax=1)
    ax.invert_yaxis()                           # row 0 (at y = 0) back on top
    ax.set_xticks(range(4), KEYS)
    ax.set_yticks(range(3), QUERIES)
    return im


def _imshow_extent(ax):
    im = ax.imshow(W, extent=(0, 4, 3, 0), vmin=0, vmax=1)
    ax.set_xticks(np.arange(4) + 0.5)
    ax.set_xticklabels(KEYS)                    # FixedFormatter: text only appears on draw
    ax.set_yticks(np.arange(3) + 0.5)
    ax.set_yticklabels(QUERIES)
    return im


def _matshow(ax):
    im = ax.matshow(W, vmin=0, vmax=1)          # x tick labels on top (label2)
    ax.set_xticks(range(4), KEYS)
    ax.set_yticks(range(3), QUERIES)
    return im


def _pcolormesh_inverted(ax):
    im = ax.pcolormesh(W, vmin=0, vmax=1)
    ax.invert_yaxis()
    ax.set_xticks(np.arange(4) + 0.5, KEYS)
    ax.set_yticks(np.arange(3) + 0.5, QUERIES)
    return im


def _pcolormesh_edges_inverted(ax):
    im = ax.pcolormesh(np.arange(5) * 2.0, np.arange(4) * 10.0, W, vmin=0, vmax=1)
    ax.set_ylim(30, 0)
    ax.set_xticks(np.arange(4) * 2.0 + 1, KEYS)
    ax.set_yticks(np.arange(3) * 10.0 + 5, QUERIES)
    return im


def _pcolor_inverted(ax):
    im = ax.pcolor(W, vmin=0, vmax=1)
    ax.invert_yaxis()
    ax.set_xticks(np.arange(4) + 0.5, KEYS)
    ax.set_yticks(np.arange(3) + 0.5, QUERIES)
    return im


DRAWINGS = [_imshow, _imshow_lower_flipped, _imshow_lower_inverted, _imshow_extent, _matshow,
            _pcolormesh_inverted, _pcolormesh_edges_inverted, _pcolor_inverted]


@pytest.mark.parametrize("draw", DRAWINGS, ids=lambda f: f.__name__.strip("_"))
def test_same_display_same_description(draw):
    fig, ax = plt.subplots()
    draw(ax)
    d = describe_axes(ax)
    np.testing.assert_allclose(np.array(d["matrix"]), W)
    assert d["shape"] == [3, 4]
    assert d["xticklabels"] == KEYS
    assert d["yticklabels"] == QUERIES
    assert d["clim"] == [0.0, 1.0]
    assert d["cmap"] == "viridis"
    assert d["visible"] is True
    assert d["has_colorbar"] is False


def test_kinds():
    fig, (a, b, c) = plt.subplots(1, 3)
    _imshow(a), _pcolormesh_inverted(b), _pcolor_inverted(c)
    assert [describe_axes(x)["kind"] for x in (a, b, c)] == ["imshow", "pcolormesh", "pcolor"]


def test_pcolormesh_without_inversion_reports_flipped_matrix():
    fig, ax = plt.subplots()
    ax.pcolormesh(W, vmin=0, vmax=1)
    ax.set_yticks(np.arange(3) + 0.5, QUERIES)
    d = describe_axes(ax)
    np.testing.assert_allclose(np.array(d["matrix"]), W[::-1])      # row 0 is drawn at the bottom
    assert d["yticklabels"] == QUERIES[::-1]


def test_transposed_plot_differs():
    fig, ax = plt.subplots()
    ax.imshow(W.T)
    d = describe_axes(ax)
    assert d["shape"] == [4, 3]
    np.testing.assert_allclose(np.array(d["matrix"]), W.T)


def test_inverted_x_axis_reverses_columns():
    fig, ax = plt.subplots()
    _imshow(ax)
    ax.invert_xaxis()
    d = describe_axes(ax)
    np.testing.assert_allclose(np.array(d["matrix"]), W[:, ::-1])
    assert d["xticklabels"] == KEYS[::-1]


def test_only_ticks_within_view_limits():
    fig, ax = plt.subplots()
    ax.imshow(W)
    ax.set_xticks(range(-2, 6), [f"t{i}" for i in range(-2, 6)])
    ax.set_xlim(-0.5, 3.5)
    assert describe_axes(ax)["xticklabels"] == ["t0", "t1", "t2", "t3"]


def test_labels_title_clim_cmap_and_colorbar():
    fig, ax = plt.subplots()
    im = ax.imshow(W, cmap="magma")
    ax.set_xlabel("Key tokens")
    ax.set_ylabel("Query tokens")
    ax.set_title("weights")
    fig.colorbar(im, ax=ax)
    d = describe_axes(ax)
    assert (d["xlabel"], d["ylabel"], d["title"]) == ("Key tokens", "Query tokens", "weights")
    assert d["cmap"] == "magma"
    assert d["clim"] == pytest.approx([W.min(), W.max()])          # autoscaled limits
    assert d["has_colorbar"] is True


def test_colorbar_in_explicit_cax():
    fig = plt.figure()
    ax = fig.add_axes((0.1, 0.1, 0.6, 0.8))
    cax = fig.add_axes((0.8, 0.1, 0.05, 0.8))
    im = ax.imshow(W)
    fig.colorbar(im, cax=cax)
    assert describe_axes(ax)["has_colorbar"] is True
    f = describe_figure(fig)
    assert f["n_colorbars"] == 1 and len(f["axes"]) == 1
    # not from a subplot grid: read from where the plots sit (one plot, a 1 x 1 grid); the
    # colorbar's axes is no cell of it
    assert (f["axes"][0]["row"], f["axes"][0]["col"], f["grid"]) == (0, 0, [1, 1])


@pytest.mark.parametrize("boxes", [((0.1, 0.1, 0.6, 0.6), (0.3, 0.3, 0.6, 0.6)),      # overlapping
                                   ((0.1, 0.1, 0.5, 0.8), (0.2, 0.1, 0.5, 0.8))],     # one row, overlapping
                         ids=["diagonal", "same row"])
def test_hand_placed_plots_that_overlap_are_no_grid(boxes):
    fig = plt.figure()
    for box in boxes:
        fig.add_axes(box).imshow(W)
    f = describe_figure(fig)
    assert f["grid"] is None and all(a["row"] is None for a in f["axes"])


def test_hand_placed_plots_side_by_side_are_a_grid():
    fig = plt.figure()
    for box in ((0.05, 0.1, 0.4, 0.8), (0.55, 0.1, 0.4, 0.8)):
        fig.add_axes(box).imshow(W)
    f = describe_figure(fig)
    assert f["grid"] == [1, 2] and [(a["row"], a["col"]) for a in f["axes"]] == [(0, 0), (0, 1)]


def test_empty_axes():
    fig, ax = plt.subplots()
    d = describe_axes(ax)
    assert d["matrix"] is None and d["kind"] is None and d["has_colorbar"] is False


@pytest.mark.parametrize("hide", ["set_visible", "axis_off"])
@pytest.mark.parametrize("shared_colorbar", [False, True])
def test_grid_with_hidden_spare_cells(hide, shared_colorbar):
    fig, axes = plt.subplots(2, 3)
    ims = []
    for i, ax in enumerate(axes.flat[:4]):
        ims.append(ax.imshow(W * (i + 1) / 4, vmin=0, vmax=1))
        ax.set_title(f"Head {i + 1}")
        if not shared_colorbar:
            fig.colorbar(ims[-1], ax=ax)
    for ax in axes.flat[4:]:
        ax.set_visible(False) if hide == "set_visible" else ax.axis("off")
    if shared_colorbar:
        fig.colorbar(ims[0], ax=axes.ravel().tolist())
    fig.suptitle("All heads")
    f = describe_figure(fig)
    assert f["suptitle"] == "All heads"
    assert f["grid"] == [2, 3]
    assert f["n_colorbars"] == (1 if shared_colorbar else 4)
    assert [(a["row"], a["col"]) for a in f["axes"]] == [(r, c) for r in range(2) for c in range(3)]
    assert [a["visible"] for a in f["axes"]] == [True] * 4 + [False] * 2
    assert [a["title"] for a in f["axes"]] == [f"Head {i}" for i in range(1, 5)] + ["", ""]
    for i, a in enumerate(f["axes"][:4]):
        np.testing.assert_allclose(np.array(a["matrix"]), W * (i + 1) / 4)
        assert a["has_colorbar"] is (not shared_colorbar or i == 0)
    json.dumps(f)                                                  # plain data only


def test_description_is_plain_data():
    fig, ax = plt.subplots()
    fig.colorbar(_matshow(ax), ax=ax)

    def check(value):
        if isinstance(value, dict):
            assert all(isinstance(k, str) for k in value)
            for v in value.values():
                check(v)
        elif isinstance(value, list):
            for v in value:
                check(v)
        else:
            assert value is None or type(value) in (bool, int, float, str), type(value)

    check(describe_figure(fig))
    check(describe_axes(ax))


def test_bare_figure_without_pyplot():
    fig = Figure()
    ax = fig.add_subplot()
    ax.pcolormesh(W)
    ax.invert_yaxis()
    ax.set_xticks(np.arange(4) + 0.5)
    ax.set_xticklabels(KEYS)
    d = describe_axes(ax)
    np.testing.assert_allclose(np.array(d["matrix"]), W)
    assert d["xticklabels"] == KEYS


def test_support_package_imports_only_support():
    import autograder.support as support
    assert support.figures is figures


def test_masked_cells_are_none():
    fig, ax = plt.subplots()
    ax.imshow(np.ma.masked_where(W > 0.8, W))
    matrix = describe_axes(ax)["matrix"]
    assert matrix[2][0] is None
    assert matrix[0] == pytest.approx(list(W[0]))


def test_pcolormesh_with_transposed_coordinates():
    """Array axis 0 running along x on screen: the inspector still reports the display."""
    X, Y = np.meshgrid(np.arange(5.0), np.arange(4.0))       # (4, 5) vertex grids, W-shaped
    fig, ax = plt.subplots()
    ax.pcolormesh(X.T, Y.T, W.T)                             # same picture, array transposed
    ax.invert_yaxis()
    np.testing.assert_allclose(np.array(describe_axes(ax)["matrix"]), W)


# --------------------------------------------------------------------------- settled without a draw
# describe_* settle what they read (ticks, labels, limits, aspect) without drawing the figure
# (figures._settle, a quarter of ex2's grading time). Each figure below is built twice and
# described once after a full draw and once settled: the descriptions must be equal.

def _tight_heatmap():
    fig, ax = plt.subplots(figsize=(3, 2))
    fig.colorbar(_imshow(ax), ax=ax)
    fig.tight_layout()
    return fig, ax


def _layout_engine_grid(layout):
    def build():
        fig, axes = plt.subplots(2, 3, layout=layout, squeeze=False)
        for i, ax in enumerate(axes.flat):
            if i == 5:
                ax.set_visible(False)
                continue
            mesh = ax.pcolormesh(W, vmin=0, vmax=1)
            ax.set_xticks(np.arange(4) + 0.5, KEYS, rotation=90)
            ax.set_yticks(np.arange(3) + 0.5, QUERIES)
            ax.invert_yaxis()
            ax.set_title(f"Head {i + 1}")
            fig.colorbar(mesh, ax=ax)
        fig.suptitle("heads")
        return fig, axes[0][1]
    return build


def _matshow_ticks_on_top():
    fig = plt.figure()
    ax = fig.add_subplot()
    ax.matshow(W)
    ax.set_xticks(range(4))
    ax.set_xticklabels(KEYS)
    ax.set_yticks(range(3))
    ax.set_yticklabels(QUERIES)
    return fig, ax


def _auto_ticks_datalim_aspect():
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.imshow(W)
    ax.set_aspect("equal", adjustable="datalim")
    return fig, ax


def _subfigure_axes():
    fig = plt.figure(layout="constrained")
    left, right = fig.subfigures(1, 2)
    left.add_subplot().plot([0, 1])
    ax = right.add_subplot()
    _imshow(ax)
    return fig, ax


def _twin_and_formatter():
    from matplotlib.ticker import FuncFormatter
    fig, ax = plt.subplots()
    ax.imshow(W)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"<{x:g}>"))
    ax.twinx().set_ylim(0, 10)
    ax.tick_params(labelbottom=False, labeltop=True)
    return fig, ax


def _inset_and_limits():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    _imshow(ax)
    ax.set_xlim(0.5, 2.5)                       # ticks outside the view are not shown
    inset = ax.inset_axes([0.6, 0.6, 0.3, 0.3])
    inset.imshow(W[:2, :2])
    return fig, ax


SETTLE_CASES = {"tight_layout": _tight_heatmap, "constrained_grid": _layout_engine_grid("constrained"),
                "tight_engine_grid": _layout_engine_grid("tight"), "matshow": _matshow_ticks_on_top,
                "auto_ticks_datalim": _auto_ticks_datalim_aspect, "subfigure": _subfigure_axes,
                "twin_formatter_labeltop": _twin_and_formatter, "inset_xlim": _inset_and_limits}


@pytest.mark.parametrize("case", SETTLE_CASES)
def test_settled_descriptions_equal_drawn_ones(case, monkeypatch):
    def both(describe):
        fig, ax = SETTLE_CASES[case]()
        settled = describe(fig, ax)
        with monkeypatch.context() as m:
            m.setattr(figures, "_settle", lambda figure, _axes: figures._draw(figure))
            fig, ax = SETTLE_CASES[case]()
            drawn = describe(fig, ax)
        return settled, drawn

    settled, drawn = both(lambda _fig, ax: describe_axes(ax))
    assert settled == drawn
    settled, drawn = both(lambda fig, _ax: describe_figure(fig))
    assert settled == drawn


def test_settling_does_not_draw(monkeypatch):
    drawn = []
    monkeypatch.setattr(Figure, "draw_without_rendering", lambda self: drawn.append(self))
    fig, ax = _tight_heatmap()
    assert describe_axes(ax)["xticklabels"] == KEYS
    assert describe_figure(fig)["axes"][0]["yticklabels"] == QUERIES
    assert drawn == []
