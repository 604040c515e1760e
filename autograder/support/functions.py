"""Scalar test functions for ``numerical_gradient``, built inside the worker.

A test cannot send a Python function across the boundary, so it sends the function's
*parameters* and the worker builds it here. The grading process builds the very same
function from the same parameters (importing this module normally) to compute what it
expects. The functions are smooth and deliberately non-separable (every output depends
on every input through a mixing matrix), so a gradient checker that perturbs the wrong
element, or several at once, gets a visibly wrong answer.

A ``RecordingFunction`` also remembers, for each call, the shape and dtype of the array
it received and how that array differed from a base point: enough for the grader to see
whether ``f`` was evaluated at ``x ± eps·e_i``. Nothing here knows an expected value.
"""
from __future__ import annotations

from typing import Any

import numpy as np


__all__ = ["make_function", "RecordingFunction"]

KINDS = ("sin_mix", "logsumexp_mix")


def _value(kind: str, params: dict, x: np.ndarray) -> float:
    v = np.asarray(x, dtype=np.float64).reshape(-1)
    A = np.asarray(params["A"], dtype=np.float64)
    b = np.asarray(params["b"], dtype=np.float64)
    c = float(params.get("c", 0.0))
    z = A @ v                                                   # (k,) every input mixed in
    if kind == "sin_mix":
        core = float(np.sum(b * np.sin(z)))
    elif kind == "logsumexp_mix":
        top = float(np.max(z))
        core = top + float(np.log(np.sum(np.exp(z - top)))) + float(np.sum(b * z))
    else:
        raise ValueError(f"unknown function kind {kind!r}; known: {', '.join(KINDS)}")
    return core + c * float(np.sum(v * v))


class RecordingFunction:
    """``f(x) -> float`` that also records how it was called.

    ``base`` (optional) is the point the gradient is taken at; each call records the
    number of entries of the received array that differ from ``base`` and the largest
    difference (``-1`` when the shapes differ).
    """

    def __init__(self, kind: str, params: dict, base: Any = None, max_records: int = 10_000):
        if kind not in KINDS:
            raise ValueError(f"unknown function kind {kind!r}; known: {', '.join(KINDS)}")
        self.kind = kind
        self.params = {k: np.array(v, dtype=np.float64) if not np.isscalar(v) else v
                       for k, v in dict(params).items()}
        self.base = None if base is None else np.array(base, dtype=np.float64)
        self.max_records = max_records
        self.calls = 0
        self.records: list[dict] = []

    def __call__(self, x: Any) -> float:
        self.calls += 1
        if len(self.records) < self.max_records:
            self.records.append(self._describe(x))
        return _value(self.kind, self.params, x)

    def _describe(self, x: Any) -> dict:
        arr = np.asarray(x)
        rec: dict[str, Any] = {"type": type(x).__name__, "shape": list(arr.shape),
                               "dtype": str(arr.dtype), "n_changed": -1, "max_change": -1.0,
                               "second_change": -1.0}
        if self.base is not None and arr.shape == self.base.shape and arr.dtype.kind == "f":
            diff = np.abs(arr.astype(np.float64) - self.base)
            rec["n_changed"] = int(np.count_nonzero(diff))
            rec["max_change"] = float(diff.max()) if diff.size else 0.0
            # the largest change but one: rounding dust (an entry restored with arithmetic) or a step
            rec["second_change"] = float(np.partition(diff.ravel(), -2)[-2]) if diff.size > 1 else 0.0
        return rec

    def report(self) -> dict[str, Any]:
        """Plain-data summary of every call so far."""
        return {"calls": self.calls, "records": list(self.records)}


def make_function(kind: str, params: dict[str, Any], base: Any = None) -> RecordingFunction:
    """The scalar function ``kind`` with parameters ``params`` (see ``_value``).

    ``sin_mix``:        f(x) = Σ_k b_k sin((A x)_k) + c Σ x²
    ``logsumexp_mix``:  f(x) = log Σ_k exp((A x)_k) + Σ_k b_k (A x)_k + c Σ x²
    with ``x`` flattened (C order); ``A`` has shape ``(k, x.size)``.
    """
    return RecordingFunction(kind, params, base)
