"""ex2 · top_attended: the k most attended keys per query, largest first, ties to the lower index."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import reference.visualize as ref
from autograder.diagnosis import ex2 as mistakes
from autograder.suites.ex2_visualization.causes import Ex2Cause
from autograder.suites.checks import fail
from autograder.suites.ex2_visualization.common import weights

pytestmark = pytest.mark.covers("top_attended")

KEYS = ["when", "the", "moon", "rose", "owls", "sang"]
LONG_KEYS = [f"k{j}" for j in range(24)]     # more keys than NumPy sorts by insertion (16)
# Three levels of weight in a row of 24 keys, each level shared by several keys.
LONG_TIES = np.array([[3, 3, 1, 3, 2, 2, 2, 1, 3, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 3, 1, 2, 3, 1],
                      [1, 2, 2, 3, 1, 3, 1, 2, 3, 3, 2, 1, 1, 2, 3, 1, 2, 2, 1, 3, 1, 3, 2, 1]], dtype=float)
LONG_TIES /= LONG_TIES.sum(axis=1, keepdims=True)


def _expect_top(got, w: np.ndarray, k: int, what: str, keys: list[str] = KEYS) -> None:
    want = ref.top_attended(w, keys, k=k)
    n = w.shape[0]
    if not isinstance(got, list) or len(got) != n:
        fail(f"{what}: expected a list with one list per query row ({n} lists), got "
             + (f"a {type(got).__name__} of length {len(got)}" if isinstance(got, (list, tuple))
                else f"a {type(got).__name__}"))
    for i, (row, expected) in enumerate(zip(got, want)):
        if not isinstance(row, list) or not all(isinstance(t, str) for t in row):
            fail(f"{what}: row {i} should be a list of {k} key tokens (strings), got "
                 f"{type(row).__name__}" + (" of " + ", ".join(sorted({type(t).__name__ for t in row}))
                                            if isinstance(row, (list, tuple)) else ""),
                 Ex2Cause.TOP_INDICES if isinstance(row, (list, tuple)) and row and not isinstance(row[0], str) else None)
        if len(row) != k:
            fail(f"{what}: row {i} should hold k={k} tokens, got {len(row)}")
    if got == want:
        return
    wrong = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    hint = mistakes.list_hint(got, mistakes.top_attended_mistakes(w, keys, k))
    fail(f"{what}: {len(wrong)} of {n} rows are wrong (first wrong row: {wrong[0]}, your answer "
         f"{[str(t)[:20] for t in got[wrong[0]]]})", hint or None)


@pytest.mark.points(1)
@pytest.mark.contract("top_attended/largest-first", "top_attended/signature")
@pytest.mark.covers("top_attended:args/k = 1")
def test_top1(student):
    """top_attended with k=1 gives each query's most attended key"""
    w = weights(4, 6, seed=1)
    got = student.visualize.top_attended(w, KEYS, k=1)
    _expect_top(got, w, 1, "top_attended(weights (4, 6), key_tokens, k=1)")


@pytest.mark.points(2)
@pytest.mark.contract("top_attended/largest-first")
@pytest.mark.covers("top_attended:args/k > 1")
def test_topk_order(student):
    """top_attended with k > 1 lists the keys largest weight first"""
    w = weights(3, 6, seed=2)
    got = student.visualize.top_attended(w, KEYS, k=3)
    _expect_top(got, w, 3, "top_attended(weights (3, 6), key_tokens, k=3)")


@pytest.mark.points(1)
@pytest.mark.contract("top_attended/ties")
@pytest.mark.covers("top_attended:ties")
def test_ties(student):
    """equal weights: the lower key index comes first (in short rows and in rows of 24 keys)"""
    w = np.array([[0.25, 0.05, 0.25, 0.05, 0.25, 0.15],
                  [1 / 6] * 6,
                  [0.05, 0.30, 0.05, 0.10, 0.20, 0.30]])
    got = student.visualize.top_attended(w, KEYS, k=4)
    _expect_top(got, w, 4, "top_attended(weights (3, 6) with equal weights in each row, key_tokens, k=4)")
    # A sort that is not stable keeps short rows in order (NumPy sorts up to 16 items by
    # insertion) and mixes up equal weights in longer ones.
    got = student.visualize.top_attended(LONG_TIES, LONG_KEYS, k=8)
    _expect_top(got, LONG_TIES, 8, "top_attended(weights (2, 24) with equal weights in each row, "
                "key_tokens, k=8)", LONG_KEYS)


@pytest.mark.note("The contract says which weights plot_attention takes (NumPy array or torch "
                  "tensor, possibly requiring grad) and says nothing of top_attended's: a "
                  "top_attended for NumPy weights only is correct by it. The contract could say "
                  "\"weights as in plot_attention\" here too.")
def test_tensor(student):
    """top_attended accepts a torch tensor that requires grad"""
    w = weights(5, 6, seed=3).astype(np.float32)
    got = student.visualize.top_attended(torch.tensor(w, requires_grad=True), KEYS, k=2)
    _expect_top(got, w.astype(np.float64), 2,
                "top_attended(torch tensor (5, 6) with requires_grad=True, key_tokens, k=2)")
