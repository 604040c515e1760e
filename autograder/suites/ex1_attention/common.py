"""Shared inputs and checks for the ex1 hidden suite (grader side; not a test file).

Every input is drawn from the current test's derived seeds (``autograder.seeds``: the
build's secret, the submission, the test), never from a fixed number; the public tests use
literal seeds. Inputs are drawn so that
every mask row allows at least one key *and* blocks at least one, so that an inverted
mask is still well defined and can be recognised.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograder import seeds
from autograder.diagnosis.causes import General
from autograder.suites import checks


def rng(offset: int) -> np.random.Generator:
    """The current test's NumPy generator number ``offset``."""
    return seeds.rng(offset)


def qkv(offset: int, lead: tuple[int, ...], n: int, m: int, d_k: int, d_v: int,
        dtype=np.float64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = rng(offset)
    Q = r.normal(size=(*lead, n, d_k)).astype(dtype)
    K = r.normal(size=(*lead, m, d_k)).astype(dtype)
    V = r.normal(size=(*lead, m, d_v)).astype(dtype)
    return Q, K, V


def mask(offset: int, shape: tuple[int, ...]) -> np.ndarray:
    """Random bool mask, each row (last axis) with at least one False and, when it has three
    keys or more, at least two True: a row that allows one key gives one-hot weights whatever
    the scores, so it could not tell a missing 1/sqrt(d_k) (or any score bug) from the truth."""
    r = rng(1000 + offset)
    out = r.random(shape) < 0.55
    m = shape[-1]
    flat = out.reshape(-1, m)
    for row in flat:
        if row.all():
            row[r.integers(m)] = False
        while row.sum() < min(2, m - 1):
            row[r.choice(np.flatnonzero(~row))] = True
    return flat.reshape(shape)


def float32_scale_factors(d_k: int) -> tuple[float, ...]:
    """Factors ``c`` such that attention of ``(c·Q, K, V)`` computed exactly is attention with
    the scale 1/√d_k held in float32, as the common ``/ torch.sqrt(torch.tensor(d_k))`` (a
    float32 tensor whatever Q's dtype) or ``* torch.tensor(d_k) ** -0.5`` computes it: the
    result keeps Q's dtype (float64) but differs from the float64 scale by up to ~1e-8, which
    the float64 tolerance alone would call wrong. Accepted results, not mistakes."""
    root = math.sqrt(d_k)
    divisor = float(torch.tensor(float(d_k), dtype=torch.float32).sqrt())
    multiplier = float(torch.tensor(float(d_k), dtype=torch.float32) ** -0.5)
    return root / divisor, root * multiplier


def to_torch(*arrays: np.ndarray, dtype=torch.float64) -> list[torch.Tensor]:
    return [torch.tensor(a, dtype=dtype) if a.dtype != bool else torch.tensor(a) for a in arrays]


def expect_rows_sum_to_one(weights: Any, what: str, inputs: str, axis: int = -1,
                           mistakes: Callable[[], Any] | None = None) -> None:
    """Non-negative, summing to 1 along ``axis``; ``mistakes`` (known wrong results) name the
    likely cause when the sums are off."""
    arr = checks.as_array(weights, what)
    if (arr < 0).any():
        checks.fail(f"{what}: has negative entries (inputs: {inputs})")
    sums = arr.sum(axis=axis)
    worst = float(np.max(np.abs(sums - 1.0))) if sums.size else 0.0
    if not math.isfinite(worst) or worst > 1e-5:
        checks.fail(f"{what}: do not sum to 1 along axis {axis} (largest deviation {worst:.3g}; "
                    f"inputs: {inputs})", checks.likely_cause(arr, mistakes))


def expect_masked_zero(weights: Any, mask_: np.ndarray, what: str, inputs: str) -> None:
    arr = checks.as_array(weights, what)
    blocked = np.broadcast_to(~np.asarray(mask_, dtype=bool), arr.shape)
    bad = int(np.count_nonzero(arr[blocked] != 0.0))
    if bad:
        checks.fail(f"{what}: {bad} of {int(blocked.sum())} masked positions (mask False) have a "
                    f"non-zero weight; they must be exactly 0 (inputs: {inputs})")


def expect_unchanged(changes: list[float], names: list[str], function: str,
                     tolerance: float = 0.0) -> None:
    touched = [n for n, c in zip(names, changes) if not (c <= tolerance)]
    if touched:
        checks.fail(f"{function} modified its input(s) {', '.join(touched)} in place",
                    General.IN_PLACE)


