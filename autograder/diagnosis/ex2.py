"""ex2 (visualize.py): known mistakes in heatmaps and in top_attended.

Every function builds, from the test's own inputs, what a specific wrong implementation
would display or return, keyed by the hint shown to the student. Runs in the grader.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from autograder.diagnosis import Candidates, diagnose, join_hints

ROWS_FLIPPED = ("the rows are upside down: query 0 must be the TOP row. With imshow keep the "
                "default origin='upper' (origin='lower' puts row 0 at the bottom); with "
                "pcolormesh call ax.invert_yaxis()")
TRANSPOSED = ("your heatmap is transposed: queries must be rows (top to bottom) and keys "
              "columns (left to right), i.e. draw weights, not weights.T")


def heatmap_mistakes(weights: Any) -> Candidates:
    """{hint: the displayed matrix that mistake produces} for an (n, m) weight matrix."""
    w = np.asarray(weights, dtype=np.float64)
    return {
        TRANSPOSED: w.T,
        ROWS_FLIPPED: w[::-1],
        "the columns are mirrored: key 0 must be the LEFTMOST column (do not invert the x axis)":
            w[:, ::-1],
        "the heatmap is upside down and mirrored (rotated by 180°): query 0 belongs in the top "
        "row and key 0 in the left column": w[::-1, ::-1],
        "your heatmap is transposed AND upside down: queries are rows counted from the top, "
        "keys columns counted from the left": w.T[::-1],
        "your heatmap is transposed and mirrored: queries are rows counted from the top, keys "
        "columns counted from the left": w.T[:, ::-1],
    }


def matrix_hint(shown: Any, weights: Any) -> str | None:
    """The hint naming how ``shown`` (as displayed) went wrong, if a known mistake explains it."""
    if shown is None:
        return None
    try:
        got = np.array([[np.nan if v is None else float(v) for v in row] for row in shown])
    except (TypeError, ValueError):
        return None
    return diagnose(got, heatmap_mistakes(weights), rtol=1e-6, atol=1e-6)


def tick_hint(got: Sequence[str], want: Sequence[str], other: Sequence[str], axis: str) -> str | None:
    """Why the tick labels of ``axis`` ("x"/"y") differ from ``want`` (``other``: the other axis' tokens)."""
    got, want, other = list(got), [str(t) for t in want], [str(t) for t in other]
    if got == want[::-1]:
        if axis == "y":
            return ("the query labels run bottom-to-top: query 0 must be labelled at the TOP "
                    "(origin='lower' without inverting the y axis?)")
        return "the key labels run right-to-left: key 0 must be labelled at the LEFT"
    if got == other and other != want:
        return ("the token lists are swapped: query tokens label the y axis (rows) and key "
                "tokens the x axis (columns)")
    if [g for g in got if g] == want and len(got) > len(want):
        return ("there are extra, unlabelled ticks: set exactly one tick per token, at the "
                "cell centres (ax.set_xticks(range(m)) / ax.set_yticks(range(n)))")
    if len(got) == len(want) + 1 and got[1:] == want:
        return ("the labels are shifted by one tick: set the tick positions first "
                "(set_xticks(range(m))) and then the labels, one per token")
    if len(got) < len(want) and all(g in want for g in got):
        return ("some tokens have no tick: set one tick per token (matplotlib's automatic "
                "ticks skip some)")
    if got and all(g == "" for g in got):
        return "the ticks have no labels: label them with the tokens"
    return None


def top_attended_mistakes(weights: Any, key_tokens: Sequence[str], k: int) -> dict[str, list]:
    """{hint: the list a wrong top_attended returns} for an (n, m) weight matrix."""
    w = np.asarray(weights, dtype=np.float64)
    tokens = list(key_tokens)
    m = w.shape[-1]

    def pick(order):
        return [[tokens[j] for j in row] for row in order.tolist()]

    ascending = np.argsort(w, axis=-1, kind="stable")[:, :k]
    # ties to the higher index: stable sort of the reversed row, indices mapped back
    high_ties = (m - 1 - np.argsort(-w[:, ::-1], axis=-1, kind="stable"))[:, :k]
    smallest_last = np.argsort(-w, axis=-1, kind="stable")[:, :k][:, ::-1]
    return {
        **library_tie_orders(w, tokens, k),
        "you return the keys with the SMALLEST weights: sort in decreasing order "
        "(largest weight first)": pick(ascending),
        "ties go to the higher key index in your code: among equal weights the key that comes "
        "first in key_tokens must come first (use a stable sort of -weights, or "
        "np.argsort(-row, kind='stable'))": pick(high_ties),
        "the right keys, but in increasing order of weight: list the largest first":
            pick(smallest_last),
    }


TIE_FIX = ("among equal weights the key that comes first in key_tokens must come first: use a stable "
           "sort of the negated weights (np.argsort(-row, kind='stable'), "
           "torch.sort(-row, stable=True)) or sorted(range(m), key=lambda j: -row[j])")


def library_tie_orders(weights: Any, key_tokens: Sequence[str], k: int) -> dict[str, list]:
    """{hint: the list} of rankings made by library calls that do not promise the lower index
    first among ties, run here on the test's own weights (the same library as the worker's)."""
    import torch

    w = np.asarray(weights, dtype=np.float64)
    t = torch.from_numpy(w.copy())
    tokens = list(key_tokens)
    orders = {
        "torch.topk": t.topk(k, dim=-1).indices.numpy(),
        "torch.argsort(…, descending=True)": torch.argsort(t, dim=-1, descending=True)[:, :k].numpy(),
        "np.argsort(-weights) (its default quicksort is not stable)": np.argsort(-w, axis=-1)[:, :k],
    }
    return {f"ties are ordered by {name}, which does not put the lower key index first; {TIE_FIX}":
            [[tokens[j] for j in row] for row in order.tolist()] for name, order in orders.items()}


def list_hint(got: Any, candidates: dict[str, list]) -> str | None:
    """Every hint whose list equals ``got`` (joined when several fit), or None."""
    return join_hints([hint for hint, value in candidates.items() if got == value])
