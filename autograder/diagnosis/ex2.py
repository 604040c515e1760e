"""ex2 (visualize.py): known mistakes in heatmaps and in top_attended.

Every function builds, from the test's own inputs, what a specific wrong implementation
would display or return, keyed by its cause (``causes.Cause``). Runs in the grader.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from autograder.diagnosis import Candidates, diagnose
from autograder.diagnosis.causes import Cause, Diagnosis, diagnosis_of
from autograder.suites.ex2_visualization.causes import Ex2Cause

ROWS_FLIPPED = Ex2Cause.ROWS_FLIPPED
TRANSPOSED = Ex2Cause.HEATMAP_TRANSPOSED


def heatmap_mistakes(weights: Any) -> Candidates:
    """{cause: the displayed matrix that mistake produces} for an (n, m) weight matrix."""
    w = np.asarray(weights, dtype=np.float64)
    return {
        TRANSPOSED: w.T,
        ROWS_FLIPPED: w[::-1],
        Ex2Cause.COLUMNS_MIRRORED: w[:, ::-1],
        Ex2Cause.ROTATED: w[::-1, ::-1],
        Ex2Cause.TRANSPOSED_FLIPPED: w.T[::-1],
        Ex2Cause.TRANSPOSED_MIRRORED: w.T[:, ::-1],
    }


def matrix_hint(shown: Any, weights: Any) -> Diagnosis | None:
    """The cause of how ``shown`` (as displayed) went wrong, if a known mistake explains it."""
    if shown is None:
        return None
    try:
        got = np.array([[np.nan if v is None else float(v) for v in row] for row in shown])
    except (TypeError, ValueError):
        return None
    return diagnose(got, heatmap_mistakes(weights), rtol=1e-6, atol=1e-6)


def tick_hint(got: Sequence[str], want: Sequence[str], other: Sequence[str], axis: str) -> Cause | None:
    """Why the tick labels of ``axis`` ("x"/"y") differ from ``want`` (``other``: the other axis' tokens)."""
    got, want, other = list(got), [str(t) for t in want], [str(t) for t in other]
    if got == want[::-1]:
        return Ex2Cause.QUERY_LABELS_BOTTOM_UP if axis == "y" else Ex2Cause.KEY_LABELS_RIGHT_TO_LEFT
    if got == other and other != want:
        return Ex2Cause.TOKENS_SWAPPED
    if [g for g in got if g] == want and len(got) > len(want):
        return Ex2Cause.EXTRA_TICKS
    if len(got) == len(want) + 1 and got[1:] == want:
        return Ex2Cause.TICKS_SHIFTED
    if len(got) < len(want) and all(g in want for g in got):
        return Ex2Cause.TICKS_MISSING
    if got and all(g == "" for g in got):
        return Ex2Cause.TICKS_UNLABELLED
    return None


def top_attended_mistakes(weights: Any, key_tokens: Sequence[str], k: int) -> dict[Cause, list]:
    """{cause: the list a wrong top_attended returns} for an (n, m) weight matrix."""
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
        Ex2Cause.TOP_SMALLEST: pick(ascending),
        Ex2Cause.TOP_TIES_HIGH: pick(high_ties),
        Ex2Cause.TOP_INCREASING: pick(smallest_last),
    }


def library_tie_orders(weights: Any, key_tokens: Sequence[str], k: int) -> dict[Cause, list]:
    """{cause: the list} of rankings made by library calls that do not promise the lower index
    first among ties, run here on the test's own weights (the same library as the worker's)."""
    import torch

    w = np.asarray(weights, dtype=np.float64)
    t = torch.from_numpy(w.copy())
    tokens = list(key_tokens)
    orders = {
        Ex2Cause.TIES_TOPK: t.topk(k, dim=-1).indices.numpy(),
        Ex2Cause.TIES_ARGSORT_DESCENDING: torch.argsort(t, dim=-1, descending=True)[:, :k].numpy(),
        Ex2Cause.TIES_QUICKSORT: np.argsort(-w, axis=-1)[:, :k],
    }
    return {cause: [[tokens[j] for j in row] for row in order.tolist()] for cause, order in orders.items()}


def list_hint(got: Any, candidates: dict[Cause, list]) -> Diagnosis | None:
    """Every cause whose list equals ``got`` (``Several`` when several fit), or None."""
    return diagnosis_of([cause for cause, value in candidates.items() if got == value])
