"""Judgements shared by the ex2 tests: what a heatmap displays versus what it should.

Messages say what was checked and what came back (shapes, the student's own labels),
never the hidden inputs' values.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from autograder.jsontypes import JSONObject
from autograder import seeds
from autograder.diagnosis import ex2 as mistakes
from autograder.suites.ex2_visualization.causes import Ex2Cause
from autograder.suites.checks import expect_finite_heatmap, fail, shown_matrix  # noqa: F401 (the suite's tests import them from here)


def weights(n: int, m: int, seed: int | str, lead: tuple[int, ...] = ()) -> np.ndarray:
    """Row-stochastic weights with distinct entries in (0, 1), drawn from the current test's
    seed number ``seed`` (an int) or from the seed named ``seed`` (a str: session fixtures)."""
    r = seeds.rng(name=seed) if isinstance(seed, str) else seeds.rng(seed)
    x = r.normal(scale=1.2, size=lead + (n, m))
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


ATOL = 1e-6          # the displayed matrix is the student's float64/float32 data


def got_axes(drawn: JSONObject, what: str = "plot_attention") -> JSONObject:
    """The inspector's description of the axes drawn into, or a failure saying why not."""
    info = drawn.get("info")
    if info is None:
        fail(f"{what} did not leave a figure the grader could find: draw into an axes "
             f"and return it (it returned a {drawn.get('types', ['?'])[0]})")
    return info


def expect_matrix(info: JSONObject, w: np.ndarray, what: str) -> None:
    """The displayed matrix equals ``w`` with query i as row i from the top, key j as column j."""
    got = shown_matrix(info, what)
    n, m = w.shape
    if got.shape != w.shape:
        hint = mistakes.matrix_hint(info["matrix"], w)
        fail(f"{what}: the heatmap should show {n} rows (queries) × {m} columns (keys), "
             f"but it shows {got.shape[0]} × {got.shape[1]}",
             hint or (mistakes.TRANSPOSED if got.shape == (m, n) else None))
    if np.isnan(got).any():
        fail(f"{what}: some cells of the heatmap are empty (masked or NaN)")
    if np.allclose(got, w, rtol=1e-5, atol=ATOL):
        return
    hint = mistakes.matrix_hint(info["matrix"], w)
    diff = np.abs(got - w)
    r, c = np.unravel_index(int(np.argmax(diff)), diff.shape)
    fail(f"{what}: the heatmap ({n} × {m}) does not show the weights with query i as row i "
         f"(from the top) and key j as column j (from the left); largest difference "
         f"{float(diff.max()):.3g} at displayed row {int(r)}, column {int(c)}", hint or None)


def _short(labels: Sequence[str], limit: int = 12) -> str:
    shown = [str(x)[:20] for x in list(labels)[:limit]]
    return repr(shown) + (f" … ({len(labels)} in all)" if len(labels) > limit else "")


def expect_ticks(info: JSONObject, queries: Sequence[str], keys: Sequence[str], what: str) -> None:
    """One tick per token: y labels = queries top to bottom, x labels = keys left to right."""
    for axis, want, other, name, direction in (
            ("y", queries, keys, "query", "top to bottom"),
            ("x", keys, queries, "key", "left to right")):
        got = list(info.get(f"{axis}ticklabels") or [])
        if got != [str(t) for t in want]:
            hint = mistakes.tick_hint(got, want, other, axis)
            fail(f"{what}: the {axis} axis should have exactly one tick per {name} token "
                 f"({len(want)} ticks), labelled with the {name} tokens in order {direction}; "
                 f"got {len(got)} tick labels {_short(got)}", hint or None)
        expect_ticks_on_cells(info, axis, name, what)


def expect_ticks_on_cells(info: JSONObject, axis: str, name: str, what: str) -> None:
    """Each tick sits on its own row (y) or column (x) of the heatmap: the i-th label names
    the i-th row or column as displayed (a tick on a cell's edge still counts as its own)."""
    offsets = info.get(f"{axis}tickoffsets")
    if not offsets:
        return
    off = [i for i, x in enumerate(offsets) if abs(x) > 0.5 + 1e-6]
    if off:
        line = "row" if axis == "y" else "column"
        fail(f"{what}: the {name} tick labels are not on their {line}s: label {off[0] + 1} sits "
             f"{offsets[off[0]]:+.2f} {line}s from the centre of {line} {off[0] + 1} as displayed "
             f"(the grader reads what is displayed: put tick i at the centre of {line} i, e.g. "
             f"set_{axis}ticks(range(n)) for imshow/matshow, or at i + 0.5 for pcolormesh)",
             Ex2Cause.TICKS_OFF_CELLS)


def expect_axis_labels(info: JSONObject, what: str) -> None:
    xlabel, ylabel = info.get("xlabel") or "", info.get("ylabel") or ""
    if "Key" not in xlabel or "Query" not in ylabel:
        swapped = "Query" in xlabel and "Key" in ylabel
        worded = ("key" in xlabel.lower() and "quer" in ylabel.lower()
                  and not ("quer" in xlabel.lower() and "key" in ylabel.lower()))
        fail(f"{what}: the x label must contain \"Key\" and the y label \"Query\"; got "
             f"x label {xlabel[:60]!r} and y label {ylabel[:60]!r}",
             Ex2Cause.AXIS_LABELS_SWAPPED if swapped else Ex2Cause.LABEL_WORDING if worded else None)


def expect_clim(info: JSONObject, what: str) -> None:
    clim = info.get("clim")
    if clim is None or None in clim:
        fail(f"{what}: the heatmap has no colour limits the grader can read; set vmin=0 and vmax=1")
    if not np.allclose(clim, [0.0, 1.0], rtol=0, atol=1e-9):
        fail(f"{what}: the colour limits should be exactly 0 and 1 (vmin=0, vmax=1), got "
             f"{round(float(clim[0]), 4)} and {round(float(clim[1]), 4)}",
             Ex2Cause.NO_COLOUR_LIMITS)


def expect_types(types: Any, kind: str, what: str) -> None:
    if kind not in (types or []):
        fail(f"{what} should return the matplotlib {kind}; it returned a "
             f"{(types or ['?'])[0]}")
