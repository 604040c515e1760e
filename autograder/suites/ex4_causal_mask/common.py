"""Shared inputs and checks for the ex4 hidden suite (grader side; not a test file).

Inputs come from the current test's derived seeds (``autograder.seeds``); the public
tests use literal ones.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

import reference.attention as ref_attention
from autograder import seeds
from autograder.diagnosis.causes import Cause, Diagnosis, diagnosis_of
from autograder.suites.ex4_causal_mask.causes import Ex4Cause
from autograder.diagnosis.causes import General
from autograder.suites import checks


def seed(offset: int) -> int:
    """The current test's seed number ``offset``."""
    return seeds.seed(offset)


def gen(offset: int) -> torch.Generator:
    return seeds.generator(offset)


def randn(offset: int, *shape: int, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=gen(offset), dtype=torch.float64).to(dtype)


def weights(offset: int, d_model: int, d_k: int, d_v: int, dtype=torch.float64):
    """``W_q, W_k (d_model, d_k)`` and ``W_v (d_model, d_v)``, scaled like a trained layer."""
    g = gen(500 + offset)
    s = 1.0 / math.sqrt(d_model)
    mats = [torch.randn(d_model, d, generator=g, dtype=torch.float64) * s * 1.5 for d in (d_k, d_k, d_v)]
    return [m.to(dtype) for m in mats]


def expect_tensor(value: Any, what: str) -> torch.Tensor:
    checks.expect_type(value, torch.Tensor, what)
    return value


def expect_unchanged(changes: list[float], names: list[str], function: str) -> None:
    touched = [n for n, c in zip(names, changes) if c != 0.0]
    if touched:
        checks.fail(f"{function} modified its input(s) {', '.join(touched)} in place",
                    General.IN_PLACE)


def expect_mask(value: Any, want: torch.Tensor, what: str, inputs: str,
                wrong: dict[Cause, torch.Tensor] | None = None) -> None:
    """A boolean mask equal to ``want``; names a known wrong pattern when one matches."""
    mask = expect_tensor(value, what)
    checks.expect_shape(mask, tuple(want.shape), what, inputs)
    checks.expect_dtype(mask, torch.bool, what)
    if torch.equal(mask, want):
        return
    wrong_count = int((mask != want).sum())
    hint = diagnosis_of([c for c, m in (wrong or {}).items() if torch.equal(mask, m)])
    checks.fail(f"{what}: {wrong_count} of {want.numel()} entries are wrong (inputs: {inputs})", hint)


# Expected gradients come from the reference's analytic backward (checked against autograd in
# the kit's own tests) and the chain rule: the grading process runs no torch autograd, which
# would leave thread pools behind in the sandbox workers it forks.

def causal_attention_grads(g_out, x, W_q, W_k, W_v) -> list[np.ndarray]:
    """d sum(g_out * output) / d (x, W_q, W_k, W_v) for causal self-attention (float64)."""
    x, W_q, W_k, W_v, g = (t.detach().to(torch.float64).numpy() for t in (x, W_q, W_k, W_v, g_out))
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    n = x.shape[-2]
    dQ, dK, dV = ref_attention.attention_backward_np(g, Q, K, V, np.tril(np.ones((n, n), dtype=bool)))
    xt = np.swapaxes(x, -1, -2)
    dx = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return [dx, (xt @ dQ).sum(0), (xt @ dK).sum(0), (xt @ dV).sum(0)]


def attend_next_grads(g_out, q_t, K_cache, V_cache) -> list[np.ndarray]:
    """d sum(g_out * output) / d (q_t, K_cache, V_cache) for one decoding step (float64)."""
    q, K, V, g = (t.detach().to(torch.float64).numpy() for t in (q_t, K_cache, V_cache, g_out))
    dq, dK, dV = ref_attention.attention_backward_np(g[:, None, :], q[:, None, :], K, V)
    return [dq[:, 0, :], dK, dV]


def nan_rows_hint(weights: Any) -> Cause | None:
    """Which rows of causal weights are NaN says which mask mistake made them fully masked."""
    from autograder.diagnosis import ex4 as mistakes
    arr = checks.as_array(weights, "weights")
    if arr.ndim < 2 or not np.isnan(arr).any():
        return None
    bad = np.isnan(arr).reshape(-1, *arr.shape[-2:]).any(axis=(0, 2))      # per query row
    if bad[0] and not bad[-1]:
        return mistakes.STRICT
    if bad[-1] and not bad[0]:
        return mistakes.BLOCKS_TRUE
    return Ex4Cause.FULLY_MASKED_ROW
