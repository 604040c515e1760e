"""Figure inspector: describe what a drawn matplotlib figure *displays*, as plain data.

Runs inside the sandboxed worker (from the kit's pristine copy) on figures drawn by
student code, and returns only dicts, lists, str, float, int, bool and None, so the
result can cross the process boundary as JSON-like data. It contains no expected
values: every judgement is made by the grading process.

The matrix is read from what is on screen, not from how it was drawn: ``imshow``
(either origin, any extent), ``matshow``, ``pcolormesh``/``pcolor`` with or without an
inverted y axis all describe the same way. Row 0 of ``matrix`` is the row displayed at
the top, column 0 the leftmost column, decided in display coordinates (which take the
view limits, inverted axes and scales into account).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

__all__ = ["describe_axes", "describe_figure", "watch_show"]


# --------------------------------------------------------------------------- helpers

def _root_figure(artist) -> Figure | None:
    try:
        return artist.get_figure(root=True)        # matplotlib >= 3.10
    except TypeError:                              # older: .figure is the root figure
        fig = artist.figure
        while fig is not None and getattr(fig, "figure", fig) is not fig:
            fig = fig.figure
        return fig


def _draw(fig: Figure | None) -> None:
    """Draw once so that tick labels, autoscaled limits, clims and the layout are final.

    Every artist's ``draw`` runs (tick formatting, autoscaling, layout engines) with the figure's
    own size and dpi, but no pixel is rendered: what is read back is the same as after a real
    draw, in about half its time, and a bare ``Figure()`` (whose canvas draws nothing) works too."""
    if fig is not None:
        fig.draw_without_rendering()


def _settle(fig: Figure | None, axes: list[Axes]) -> None:
    """Settle what a description of ``axes`` reads, as a draw of ``fig`` would: the figure's
    layout engine, if it has one (it sizes the axes, and so the ticks an automatic locator
    picks), then for each visible axes its aspect (which may move its view limits), its view
    limits (autoscaled), and for each visible axis the ticks within them and their labels'
    texts. A draw does the same and also draws every artist, which nothing here reads: a
    quarter of ex2's grading time (tests/test_figures.py checks both give the same
    descriptions). The tick step is matplotlib's own (``Axis._update_ticks``, what a draw
    calls): where a matplotlib lacks it, the figure is drawn."""
    if fig is None or not all(callable(getattr(axis, "_update_ticks", None))
                              for ax in axes for axis in (ax.xaxis, ax.yaxis)):
        _draw(fig)
        return
    engine = fig.get_layout_engine()
    if fig.axes and engine is not None:
        try:
            engine.execute(fig)
        except ValueError:                      # as a draw: a layout that cannot be made is skipped
            pass
    for ax in axes:
        if not ax.get_visible():                # a draw leaves what it does not draw unsettled
            continue
        if ax.get_axes_locator() is None:       # placed by a locator (insets): only a draw knows where
            ax.apply_aspect()
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_visible():
                axis._update_ticks()


def _num(v) -> float | None:
    return None if v is None else float(v)


def _text(t) -> str:
    return "" if t is None else str(t.get_text() if hasattr(t, "get_text") else t)


def _is_colorbar_axes(ax: Axes) -> bool:
    return getattr(ax, "_colorbar", None) is not None


def _mappables(ax: Axes) -> list:
    """Matrix-showing artists of ``ax``: images and meshes that carry an array."""
    found = [im for im in ax.images if isinstance(im, AxesImage)]
    found += [c for c in ax.collections
              if isinstance(c, Collection) and hasattr(c, "get_coordinates")
              and c.get_array() is not None]
    return found


def _main_mappable(ax: Axes):
    """The matrix on top: the visible mappable with the highest zorder, last drawn on ties."""
    candidates = [(a.get_zorder(), i, a) for i, a in enumerate(_mappables(ax)) if a.get_visible()]
    return max(candidates, key=lambda t: t[:2])[2] if candidates else None


def _kind(artist) -> str:
    if isinstance(artist, AxesImage):
        return "imshow"                           # matshow draws an AxesImage too
    name = type(artist).__name__
    return {"QuadMesh": "pcolormesh", "PolyQuadMesh": "pcolor"}.get(name, name)


def _cell_centres(artist, data: np.ndarray) -> np.ndarray:
    """Data-coordinate centres (rows, cols, 2) of each cell of a 2-D ``data``."""
    rows, cols = data.shape[:2]
    if isinstance(artist, AxesImage):
        left, right, bottom, top = artist.get_extent()
        # origin "upper": row 0 sits at the `top` extent value; "lower": at `bottom`.
        y0, y1 = (top, bottom) if artist.origin == "upper" else (bottom, top)
        xs = left + (np.arange(cols) + 0.5) * (right - left) / cols
        ys = y0 + (np.arange(rows) + 0.5) * (y1 - y0) / rows
        gx, gy = np.meshgrid(xs, ys)                           # (rows, cols) each
        return np.stack([gx, gy], axis=-1)
    coords = np.asarray(artist.get_coordinates(), dtype=float)  # vertices (R+1, C+1, 2) or (R, C, 2)
    if coords.shape[:2] == (rows, cols):                        # gouraud: values live on vertices
        return coords
    return (coords[:-1, :-1] + coords[1:, :-1] + coords[:-1, 1:] + coords[1:, 1:]) / 4.0


def _displayed_matrix(artist) -> list[list[Any]] | None:
    """The artist's array arranged as shown: row 0 at the top, column 0 at the left."""
    arr = artist.get_array()
    if arr is None:
        return None
    data = np.ma.asarray(arr)
    if isinstance(artist, AxesImage) and data.ndim == 1:
        return None
    if data.ndim == 1:                                          # old-style flattened mesh
        coords = artist.get_coordinates()
        data = data.reshape(coords.shape[0] - 1, coords.shape[1] - 1)
    values = np.ma.filled(data.astype(float), np.nan)
    if values.ndim < 2:
        return None
    centres = _cell_centres(artist, values)                     # (R, C, 2) data coords
    flat = centres.reshape(-1, 2)
    disp = artist.get_transform().transform(flat).reshape(centres.shape)  # pixels, y up

    # If array axis 0 runs horizontally on screen (e.g. a mesh given transposed
    # coordinates), swap axes so that axis 0 is the vertical one.
    if values.shape[0] > 1 or values.shape[1] > 1:
        d0 = disp[-1, 0] - disp[0, 0]                           # moving along axis 0
        d1 = disp[0, -1] - disp[0, 0]                           # moving along axis 1
        if abs(d0[0]) + abs(d1[1]) > abs(d0[1]) + abs(d1[0]):
            values, disp = np.swapaxes(values, 0, 1), np.swapaxes(disp, 0, 1)

    row_y = disp[..., 1].mean(axis=1)                           # higher = nearer the top
    col_x = disp[..., 0].mean(axis=0)
    rows = np.argsort(-row_y, kind="stable")
    cols = np.argsort(col_x, kind="stable")
    shown = values[rows][:, cols]
    return [[None if (isinstance(v, float) and math.isnan(v)) else v for v in row]
            for row in shown.tolist()]


def _cell_pixels(artist) -> tuple[np.ndarray, np.ndarray] | None:
    """Pixel centres of the displayed rows (top first, y down) and columns (left first), as
    :func:`_displayed_matrix` orders them; None when the artist shows no 2-D matrix."""
    arr = artist.get_array()
    if arr is None:
        return None
    data = np.ma.asarray(arr)
    if data.ndim == 1:
        if isinstance(artist, AxesImage):
            return None
        coords = artist.get_coordinates()
        data = data.reshape(coords.shape[0] - 1, coords.shape[1] - 1)
    if data.ndim < 2:
        return None
    centres = _cell_centres(artist, data)                         # (R, C, 2) data coords
    disp = artist.get_transform().transform(centres.reshape(-1, 2)).reshape(centres.shape)
    if data.shape[0] > 1 or data.shape[1] > 1:
        d0, d1 = disp[-1, 0] - disp[0, 0], disp[0, -1] - disp[0, 0]
        if abs(d0[0]) + abs(d1[1]) > abs(d0[1]) + abs(d1[0]):    # axis 0 runs horizontally
            disp = np.swapaxes(disp, 0, 1)
    rows = np.sort(-disp[..., 1].mean(axis=1))                    # -y: top first
    cols = np.sort(disp[..., 0].mean(axis=0))
    return rows, cols


def _tick_offsets(ax: Axes, which: str) -> list[float] | None:
    """Where each visible tick sits, in cells, from the centre of the row (y, top first) or
    column (x, left first) of the same rank: 0 at the centre, ±0.5 on its edges; in the
    order of :func:`_tick_labels`. None when nothing shows a matrix."""
    mappable = _main_mappable(ax)
    cells = _cell_pixels(mappable) if mappable is not None else None
    if cells is None:
        return None
    centres = cells[1] if which == "x" else cells[0]
    if len(centres) == 0:
        return None
    if len(centres) > 1:
        pitch = float(np.median(np.diff(centres)))
    else:                                                         # one cell: its size on screen
        box = mappable.get_window_extent()
        pitch = float(box.width if which == "x" else box.height)
    if not pitch:
        return None
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * max(1.0, abs(hi - lo))
    places = []
    for loc in axis.get_majorticklocs():
        if not (lo - tol <= loc <= hi + tol):
            continue
        if which == "x":
            places.append(ax.get_xaxis_transform().transform([(loc, 0.0)])[0][0])
        else:
            places.append(-ax.get_yaxis_transform().transform([(0.0, loc)])[0][1])
    places.sort()
    return [float((place - centre) / abs(pitch)) for place, centre in zip(places, centres)]


def _tick_labels(ax: Axes, which: str) -> list[str]:
    """Tick label texts within the view limits, left-to-right (x) or top-to-bottom (y)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    locs = list(axis.get_majorticklocs())
    ticks = axis.get_major_ticks(len(locs))
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * max(1.0, abs(hi - lo))
    items = []
    for loc, tick in zip(locs, ticks):
        if not (lo - tol <= loc <= hi + tol):
            continue
        label = tick.label1 if tick.label1.get_visible() else tick.label2
        text = label.get_text() if label.get_visible() else ""
        if which == "x":      # (x in data, y in axes coords) -> pixels; left first
            key = ax.get_xaxis_transform().transform([(loc, 0.0)])[0][0]
        else:                 # (x in axes coords, y in data) -> pixels; top first
            key = -ax.get_yaxis_transform().transform([(0.0, loc)])[0][1]
        items.append((key, text))
    items.sort(key=lambda t: t[0])
    return [text for _, text in items]


def _colorbar_axes(fig: Figure | None) -> list[Axes]:
    """Every colorbar of the figure: in its own axes (``fig.colorbar(image, ax=...)``,
    ``cax=fig.add_subplot(...)``) or in an inset of a plot's axes (``cax=ax.inset_axes(...)``,
    which ``fig.get_axes()`` does not list)."""
    if fig is None:
        return []
    found, seen = [], set()
    pending = list(fig.get_axes())
    while pending:
        ax = pending.pop(0)
        if id(ax) in seen:
            continue
        seen.add(id(ax))
        if _is_colorbar_axes(ax):
            found.append(ax)
        pending.extend(getattr(ax, "child_axes", []))
    return found


def _stands_for(scale: Any, heatmap: Any) -> bool:
    """A colorbar made from a ``ScalarMappable`` of its own (drawn in no axes) stands for the
    heatmap when it shows the same colormap over the same limits:
    ``fig.colorbar(ScalarMappable(Normalize(0, 1), "viridis"), ax=ax)`` is the heatmap's scale."""
    if getattr(scale, "axes", None) is not None:        # another plot's own image or mesh
        return False
    try:
        return (scale.get_cmap().name == heatmap.get_cmap().name and type(scale.norm) is type(heatmap.norm)
                and tuple(map(float, scale.get_clim())) == tuple(map(float, heatmap.get_clim())))
    except (AttributeError, TypeError, ValueError):
        return False


def _colorbar_mappables(fig: Figure | None) -> list:
    return [a._colorbar.mappable for a in _colorbar_axes(fig)]


# --------------------------------------------------------------------------- public

def describe_axes(ax: Axes, *, draw: bool = True) -> dict[str, Any]:
    """Describe one axes as plain data.

    Keys: ``kind`` ("imshow", "pcolormesh", "pcolor" or None when nothing shows a
    matrix), ``matrix`` (list of rows as displayed; masked or NaN cells are None), ``shape``,
    ``xticklabels``/``yticklabels`` (display order, only ticks within the view limits),
    ``xtickoffsets``/``ytickoffsets`` (each of those ticks' distance, in cells, from the centre
    of the column or row of the same rank; None when no matrix is shown),
    ``xlabel``, ``ylabel``, ``title``, ``clim`` ([vmin, vmax]), ``cmap``,
    ``has_colorbar``, ``visible`` (axes visible and axis on), ``is_colorbar``,
    ``xlim``/``ylim`` (view limits as given by matplotlib, inverted ones reversed).
    """
    fig = _root_figure(ax)
    if draw:
        _settle(fig, [ax])
    mappable = _main_mappable(ax)
    matrix = _displayed_matrix(mappable) if mappable is not None else None
    clim = cmap = None
    has_colorbar = False
    if mappable is not None:
        vmin, vmax = mappable.get_clim()
        clim = [_num(vmin), _num(vmax)]
        cmap = mappable.get_cmap().name if mappable.get_cmap() is not None else None
        has_colorbar = (getattr(mappable, "colorbar", None) is not None
                        or any(m is mappable or _stands_for(m, mappable) for m in _colorbar_mappables(fig)))
    return {
        "kind": _kind(mappable) if mappable is not None else None,
        "matrix": matrix,
        "shape": [len(matrix), len(matrix[0]) if matrix else 0] if matrix is not None else None,
        "xticklabels": _tick_labels(ax, "x"),
        "yticklabels": _tick_labels(ax, "y"),
        "xtickoffsets": _tick_offsets(ax, "x"),
        "ytickoffsets": _tick_offsets(ax, "y"),
        "xlabel": ax.get_xlabel(),
        "ylabel": ax.get_ylabel(),
        "title": _title(ax),
        "clim": clim,
        "cmap": cmap,
        "has_colorbar": bool(has_colorbar),
        "visible": bool(ax.get_visible() and ax.axison),
        "is_colorbar": _is_colorbar_axes(ax),
        "xlim": [float(v) for v in ax.get_xlim()],
        "ylim": [float(v) for v in ax.get_ylim()],
    }


def _title(ax: Axes) -> str:
    """The axes' title wherever it is placed: the centred one (``set_title(t)``), else the one
    at the left or the right (``set_title(t, loc="left")``)."""
    for loc in ("center", "left", "right"):
        text = ax.get_title(loc=loc)
        if text:
            return text
    return ""


def _top_spec(ax: Axes):
    """The axes' spec in its figure's top-level grid (a colorbar may have nested the axes'
    own spec), or None when it does not come from a grid."""
    get_ss = getattr(ax, "get_subplotspec", None)
    ss = get_ss() if get_ss is not None else None
    return ss.get_topmost_subplotspec() if ss is not None else None


def _colorbar_only_lines(plot_axes: list[Axes], colorbars: list[Axes]) -> tuple[set[int], set[int]]:
    """(rows, columns) of the plots' top-level grid that hold a colorbar and no plot: e.g. the
    narrow last column of ``GridSpec(nrows, ncols + 1, width_ratios=[..., 0.05])`` that a
    shared colorbar is drawn in. They are not part of the grid of plots."""
    specs = [s for s in (_top_spec(a) for a in plot_axes) if s is not None]
    if not specs:
        return set(), set()
    gridspec = specs[0].get_gridspec()
    used_rows = {r for s in specs if s.get_gridspec() is gridspec for r in s.rowspan}
    used_cols = {c for s in specs if s.get_gridspec() is gridspec for c in s.colspan}
    bar_rows, bar_cols = set(), set()
    for spec in (_top_spec(a) for a in colorbars):
        if spec is not None and spec.get_gridspec() is gridspec:
            bar_rows.update(spec.rowspan)
            bar_cols.update(spec.colspan)
    return bar_rows - used_rows, bar_cols - used_cols


def _grid_position(ax: Axes, skip: tuple[set[int], set[int]] = (set(), set())
                   ) -> tuple[tuple[int, int] | None, int | None, int | None]:
    """((nrows, ncols), row, col) of ``ax`` in its figure's top-level subplot grid, leaving out
    the rows and columns in ``skip`` (those that hold only a colorbar)."""
    top = _top_spec(ax)
    if top is None:
        return None, None, None
    nrows, ncols = top.get_gridspec().get_geometry()
    rows, cols = skip
    row, col = int(top.rowspan.start), int(top.colspan.start)
    return ((int(nrows) - len(rows), int(ncols) - len(cols)),
            row - sum(1 for r in rows if r < row), col - sum(1 for c in cols if c < col))


def _lines(values: list[float], tolerance: float = 1e-3) -> list[float]:
    """The distinct values (figure fractions), those within ``tolerance`` taken as one."""
    lines: list[float] = []
    for v in sorted(values):
        if not lines or v - lines[-1] > tolerance:
            lines.append(v)
    return lines


def _placed_box(ax: Axes):
    """Where the axes is drawn, in figure fractions: its locator's box when it has one
    (``ImageGrid`` places its cells with locators; ``get_position`` gives the whole grid)."""
    locator = ax.get_axes_locator()
    if locator is not None:
        try:
            return locator(ax, ax.figure.canvas.get_renderer())
        except Exception:           # a locator of the student's own that fails: no position
            pass
    return ax.get_position()


def _any_overlap(boxes: list, margin: float = 1e-3) -> bool:
    """Whether two of the boxes (figure fractions) overlap by more than ``margin`` both ways."""
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > margin and min(a.y1, b.y1) - max(a.y0, b.y0) > margin:
                return True
    return False


def _is_grid_bar_slot(ax: Axes) -> bool:
    """One of ``ImageGrid``'s colorbar slots (``CbarAxes``; unused ones are hidden): no cell."""
    return any(cls.__name__ == "CbarAxesBase" for cls in type(ax).__mro__)


def _grid_from_positions(axes: list[Axes]) -> dict[int, tuple[tuple[int, int], int, int]]:
    """For axes laid out without a subplot grid (``mpl_toolkits``' ``ImageGrid``, axes placed
    by hand): {id(axes): ((nrows, ncols), row, col)}, rows and columns read from where the
    axes sit on the figure (top row first), when they form a grid at all: hidden cells count
    (a spare cell is part of the grid, as in ``plt.subplots``); axes that overlap make none."""
    boxes = {id(a): _placed_box(a) for a in axes}
    lefts = _lines([b.x0 for b in boxes.values()])
    tops = _lines([-b.y1 for b in boxes.values()])
    if not axes or len(lefts) * len(tops) < len(axes):
        return {}

    def index(lines: list[float], v: float) -> int:
        return min(range(len(lines)), key=lambda i: abs(lines[i] - v))

    if _any_overlap(list(boxes.values())):
        return {}
    cells = {key: (index(tops, -b.y1), index(lefts, b.x0)) for key, b in boxes.items()}
    if len(set(cells.values())) < len(cells):          # two axes in one cell: not a grid
        return {}
    return {key: ((len(tops), len(lefts)), row, col) for key, (row, col) in cells.items()}


def describe_figure(fig: Figure) -> dict[str, Any]:
    """Describe a figure as plain data.

    Keys: ``suptitle`` (text, "" when unset), ``grid`` ([nrows, ncols] of the subplot
    layout, None when no axes comes from a grid), ``axes`` (one :func:`describe_axes`
    dict per non-colorbar axes, sorted by grid position, each with ``row``, ``col``),
    ``n_colorbars``.
    """
    fig = _root_figure(fig) if not isinstance(fig, Figure) else fig
    all_axes = fig.get_axes()
    _settle(fig, all_axes)
    plot_axes = [a for a in all_axes if not _is_colorbar_axes(a)]
    colorbars = _colorbar_axes(fig)
    skip = _colorbar_only_lines(plot_axes, colorbars)
    by_position = {} if any(_top_spec(a) is not None for a in plot_axes) else \
        _grid_from_positions([a for a in plot_axes if not _is_grid_bar_slot(a)])
    described, grid = [], None
    for order, ax in enumerate(plot_axes):
        geometry, row, col = by_position.get(id(ax)) or _grid_position(ax, skip)
        if grid is None and geometry is not None:
            grid = list(geometry)
        info = describe_axes(ax, draw=False)
        info.update(row=row, col=col)
        described.append((row if row is not None else 1 << 30,
                          col if col is not None else 1 << 30, order, info))
    described.sort(key=lambda t: t[:3])
    suptitle = getattr(fig, "_suptitle", None)
    return {
        "suptitle": _text(suptitle),
        "grid": grid,
        "axes": [info for *_, info in described],
        "n_colorbars": len(colorbars),
    }


class ShowWatch:
    """Counts ``plt.show()`` calls from the moment it is made until it is called: calling it
    puts the real ``show`` back and returns the count (one use; no module-level state)."""

    def __init__(self) -> None:
        import sys
        self._pyplot = sys.modules["matplotlib.pyplot"]
        self._saved = self._pyplot.show
        self.calls = 0
        self._pyplot.show = self._show

    def _show(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1                       # under Agg show() does nothing; only counted

    def __call__(self) -> int:
        self._pyplot.show = self._saved
        return int(self.calls)


def watch_show() -> ShowWatch:
    """Start counting ``plt.show()`` calls (the spec forbids them in plotting functions);
    the returned watch, called, stops and gives the count."""
    import matplotlib.pyplot  # noqa: F401 - loaded before the student's plotting call
    return ShowWatch()

