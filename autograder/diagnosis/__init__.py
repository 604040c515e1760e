"""Naming the mistake: compare a wrong result with results of known wrong implementations.

Each exercise module here (``ex1.py`` …) builds, from the test's own inputs, the outputs a
student would get by making a specific, common mistake (no 1/√d_k, softmax over the wrong
axis, inverted mask, …). When a student's output matches one, the failure message names it
in the course's terms. Variants run in the grader, from the reference, never in the worker.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

# hint text -> the output that mistake produces
Candidates = Mapping[str, Any]


def _array(x: Any) -> np.ndarray | None:
    if isinstance(x, torch.Tensor):
        x = x.detach().to(torch.float64).numpy() if x.is_floating_point() else x.detach().numpy()
    return np.asarray(x, dtype=np.float64) if isinstance(x, np.ndarray) else None


def diagnose(actual: Any, candidates: Candidates, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """The hints of the candidates whose output matches ``actual``, if any: one hint, or
    several joined by "or" when the test's inputs cannot tell those mistakes apart (never
    one picked arbitrarily)."""
    got = _array(actual)
    if got is None:
        return None
    hits: list[str] = []
    for hint, output in candidates.items():
        want = _array(output)
        if want is not None and want.shape == got.shape and np.allclose(got, want, rtol=rtol, atol=atol):
            hits.append(hint)
    return join_hints(hits)


def join_hints(hints: list[str]) -> str | None:
    """``"A\n  or: B"`` for hints that fit equally well (duplicates dropped); None if none."""
    unique = list(dict.fromkeys(hints))
    return "\n  or: ".join(unique) if unique else None
