"""Naming the mistake: compare a wrong result with results of known wrong implementations.

Each exercise module here (``ex1.py`` …) builds, from the test's own inputs, the outputs a
student would get by making a specific, common mistake (no 1/√d_k, softmax over the wrong
axis, inverted mask, …), keyed by its :class:`~autograder.diagnosis.causes.Cause`. When a
student's output matches one, the failure message names it in the course's terms. Variants
run in the grader, from the reference, never in the worker.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

from autograder.diagnosis.causes import Cause, Diagnosis, diagnosis_of

if TYPE_CHECKING:
    import numpy as np

# cause -> the output that mistake produces ({cause: output}, or (cause, output) pairs when
# two variants of one mistake give different outputs)
Candidates = Union[Mapping[Cause, Any], Iterable[tuple[Cause, Any]]]


def pairs(candidates: Candidates) -> list[tuple[Cause, Any]]:
    return list(candidates.items()) if isinstance(candidates, Mapping) else list(candidates)


def _array(x: Any) -> "np.ndarray | None":
    import numpy as np           # here, not at import: `causes` (the gradebook's) stays light
    import torch

    if isinstance(x, torch.Tensor):
        x = x.detach().to(torch.float64).numpy() if x.is_floating_point() else x.detach().numpy()
    return np.asarray(x, dtype=np.float64) if isinstance(x, np.ndarray) else None


def diagnose(actual: Any, candidates: Candidates, rtol: float = 1e-4, atol: float = 1e-5) -> Diagnosis | None:
    """The causes of the candidates whose output matches ``actual``, if any: one cause, or
    ``Several`` when the test's inputs cannot tell those mistakes apart (never one picked
    arbitrarily)."""
    import numpy as np

    got = _array(actual)
    if got is None:
        return None
    hits: list[Cause] = []
    for cause, output in pairs(candidates):
        want = _array(output)
        if want is not None and want.shape == got.shape and np.allclose(got, want, rtol=rtol, atol=atol):
            hits.append(cause)
    return diagnosis_of(hits)
