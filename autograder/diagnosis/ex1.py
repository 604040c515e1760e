"""ex1 known mistakes: what a student's attention returns when it makes a common error.

Each function takes the test's own inputs and returns ``{cause: output}`` for
:func:`autograder.suites.checks.expect_close` (``mistakes=``), the causes being
:class:`autograder.diagnosis.causes.Cause` members (their sentences speak to the student in the
course's terms). Everything is computed here, in the grading process, with NumPy in float64;
nothing runs in the worker.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograder.diagnosis import Candidates
from autograder.diagnosis.causes import Cause
from autograder.suites.ex1_attention.causes import Ex1Cause

# --------------------------------------------------------------------------- causes

NO_SCALE = Ex1Cause.NO_SCALE
SCALE_DV = Ex1Cause.SCALE_DV
SCALE_NO_SQRT = Ex1Cause.SCALE_NO_SQRT
SCALE_M = Ex1Cause.SCALE_M
WRONG_AXIS = Ex1Cause.WRONG_AXIS
INVERTED_MASK = Ex1Cause.INVERTED_MASK
MASK_AFTER = Ex1Cause.MASK_AFTER
MASK_IGNORED = Ex1Cause.MASK_IGNORED
MASK_ZERO = Ex1Cause.MASK_ZERO
TRANSPOSED = Ex1Cause.TRANSPOSED
OUTPUT_IS_WEIGHTS_T = Ex1Cause.OUTPUT_IS_WEIGHTS_T
SOFTMAX_LAST_AXIS = Ex1Cause.SOFTMAX_LAST_AXIS
SOFTMAX_GLOBAL = Ex1Cause.SOFTMAX_GLOBAL
SOFTMAX_SUM_LAST = Ex1Cause.SOFTMAX_SUM_LAST
SOFTMAX_NO_SHIFT = Ex1Cause.SOFTMAX_NO_SHIFT
SOFTMAX_GLOBAL_MAX = Ex1Cause.SOFTMAX_GLOBAL_MAX
BACK_NO_ROWSUM = Ex1Cause.BACK_NO_ROWSUM
BACK_NO_SCALE = Ex1Cause.BACK_NO_SCALE
BACK_MASK_IGNORED = Ex1Cause.BACK_MASK_IGNORED
BACK_DV_NOT_T = Ex1Cause.BACK_DV_NOT_T
BACK_DK_NOT_T = Ex1Cause.BACK_DK_NOT_T
BACK_DQ_USES_V = Ex1Cause.BACK_DQ_USES_V
NG_FORWARD = Ex1Cause.NG_FORWARD
NG_BACKWARD = Ex1Cause.NG_BACKWARD
NG_HALF = Ex1Cause.NG_HALF
NG_PRECEDENCE = Ex1Cause.NG_PRECEDENCE
NG_IGNORES_EPS = Ex1Cause.NG_IGNORES_EPS


# --------------------------------------------------------------------------- helpers

def f64(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return x.numpy().astype(np.float64) if x.is_floating_point() else x.numpy()
    return np.asarray(x, dtype=np.float64) if np.asarray(x).dtype != bool else np.asarray(x)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V, mask=None, *, scale: float | None = None, axis: int = -1,
              invert: bool = False, after: bool = False, zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Attention with one mistake switched on (all off: the correct result)."""
    Q, K, V = f64(Q), f64(K), f64(V)
    scale = 1.0 / math.sqrt(Q.shape[-1]) if scale is None else scale
    s = Q @ np.swapaxes(K, -1, -2) * scale
    m = None if mask is None else np.asarray(f64(mask), dtype=bool)
    if m is not None and invert:
        m = ~m
    if m is not None and zero:
        s = np.where(m, s, 0.0)
    elif m is not None and not after:
        s = np.where(m, s, -1e9)
    w = softmax(s, axis=axis)
    if m is not None and after:
        w = np.where(m, w, 0.0)
    return w @ V, w


def _pick(pair: tuple[np.ndarray, np.ndarray], part: str) -> np.ndarray:
    return pair[0] if part == "output" else pair[1]


# --------------------------------------------------------------------------- forward

def forward(Q, K, V, mask=None, part: str = "output") -> Candidates:
    """Known wrong forward passes; ``part`` is ``"output"`` or ``"weights"``."""
    Qa, Ka, Va = f64(Q), f64(K), f64(V)
    d_k, d_v, m = Qa.shape[-1], Va.shape[-1], Ka.shape[-2]
    out: dict[str, np.ndarray] = {}
    if mask is not None:
        out[INVERTED_MASK] = _pick(attention(Qa, Ka, Va, mask, invert=True), part)
        out[MASK_AFTER] = _pick(attention(Qa, Ka, Va, mask, after=True), part)
        out[MASK_ZERO] = _pick(attention(Qa, Ka, Va, mask, zero=True), part)
        out[MASK_IGNORED] = _pick(attention(Qa, Ka, Va, None), part)
    out[NO_SCALE] = _pick(attention(Qa, Ka, Va, mask, scale=1.0), part)
    if d_v != d_k:
        out[SCALE_DV] = _pick(attention(Qa, Ka, Va, mask, scale=1 / math.sqrt(d_v)), part)
    if d_k != 1:
        out[SCALE_NO_SQRT] = _pick(attention(Qa, Ka, Va, mask, scale=1 / d_k), part)
    if m not in (d_k, d_k * d_k):
        out[SCALE_M] = _pick(attention(Qa, Ka, Va, mask, scale=1 / math.sqrt(m)), part)
    out[WRONG_AXIS] = _pick(attention(Qa, Ka, Va, mask, axis=-2), part)
    _, w = attention(Qa, Ka, Va, mask)
    if part == "weights":
        out[TRANSPOSED] = np.swapaxes(w, -1, -2)
    else:
        wt = np.swapaxes(w, -1, -2)
        if wt.shape[-1] == Va.shape[-2]:
            out[OUTPUT_IS_WEIGHTS_T] = wt @ Va
    return out


def softmax_mistakes(x, axis: int = -1) -> Candidates:
    xa = f64(x)
    out: dict[str, np.ndarray] = {}
    if axis not in (-1, xa.ndim - 1):
        out[SOFTMAX_LAST_AXIS] = softmax(xa, axis=-1)
        e = np.exp(xa - np.max(xa, axis=axis, keepdims=True))
        out[SOFTMAX_SUM_LAST] = e / np.sum(e, axis=-1, keepdims=True)
    e = np.exp(xa - xa.max())
    out[SOFTMAX_GLOBAL] = e / e.sum()
    return out


def softmax_nan_hint(got, x, axis: int = -1) -> Cause | None:
    """Name the unstable softmax whose NaN pattern ``got`` shares (None if none does)."""
    try:
        nan = np.isnan(f64(got))
    except (TypeError, ValueError):
        return None
    xa = f64(x)
    if nan.shape != xa.shape or not nan.any():
        return None
    with np.errstate(all="ignore"):
        e = np.exp(xa)
        plain = e / e.sum(axis=axis, keepdims=True)
        g = np.exp(xa - np.max(xa))
        global_max = g / g.sum(axis=axis, keepdims=True)
    for cause, variant in ((SOFTMAX_NO_SHIFT, plain), (SOFTMAX_GLOBAL_MAX, global_max)):
        if np.array_equal(np.isnan(variant), nan):
            return cause
    return None


# --------------------------------------------------------------------------- backward

def _backward(dO, Q, K, V, mask=None, *, rowsum=True, scale=True, use_mask=True,
              dv_t=True, dk_t=True, dq_k=True):
    dO, Q, K, V = f64(dO), f64(Q), f64(K), f64(V)
    s = 1.0 / math.sqrt(Q.shape[-1]) if scale else 1.0
    _, P = attention(Q, K, V, mask if use_mask else None)
    dV = (np.swapaxes(P, -1, -2) if dv_t else P) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
    dS = P * (dP - np.sum(dP * P, axis=-1, keepdims=True)) if rowsum else P * dP
    dQ = dS @ (K if dq_k else V) * s
    dK = (np.swapaxes(dS, -1, -2) if dk_t else dS) @ Q * s
    return dQ, dK, dV


def backward(dO, Q, K, V, mask=None, which: int = 0) -> Candidates:
    """Known wrong backward passes for dQ (``which=0``), dK (1) or dV (2); for dV also
    Pᵀ @ d_output with the weights of each wrong forward pass, named by the forward's cause
    (the backward recomputes the forward: fix that first)."""
    variants: list[tuple[Cause, dict]] = [(BACK_NO_ROWSUM, {"rowsum": False}),
                                          (BACK_NO_SCALE, {"scale": False})]
    if mask is not None:
        variants.append((BACK_MASK_IGNORED, {"use_mask": False}))
    variants += [(BACK_DV_NOT_T, {"dv_t": False}), (BACK_DK_NOT_T, {"dk_t": False}),
                 (BACK_DQ_USES_V, {"dq_k": False})]
    out: list[tuple[Cause, np.ndarray]] = []
    for cause, flags in variants:
        try:
            out.append((cause, _backward(dO, Q, K, V, mask, **flags)[which]))
        except ValueError:                         # a variant that cannot even be formed here
            continue
    if which == 2:                                 # dV = Pᵀ dO with the weights of a wrong forward pass
        for cause, P in forward(Q, K, V, mask, "weights").items():
            if P.shape[-2:] == (f64(Q).shape[-2], f64(K).shape[-2]):
                out.append((cause, np.swapaxes(P, -1, -2) @ f64(dO)))
    return out


# --------------------------------------------------------------------------- numerical gradient

def numerical_gradient(f: Callable[[np.ndarray], float], x, eps: float) -> Candidates:
    x = np.array(f64(x), dtype=np.float64)
    fwd, bwd, default = (np.zeros_like(x) for _ in range(3))
    f0 = float(f(x.copy()))
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        fp, fm = float(f(xp)), float(f(xm))
        fwd[i] = (fp - f0) / eps
        bwd[i] = (f0 - fm) / eps
        central = (fp - fm) / (2 * eps)
        default[i] = central
    out = {NG_HALF: 2 * default, NG_PRECEDENCE: default * eps * eps}    # (f+ − f−) / 2 * eps
    if eps >= 1e-3:                        # smaller steps: one-sided differences are too close to tell
        out.update({NG_FORWARD: fwd, NG_BACKWARD: bwd})
    if eps != 1e-6:
        d6 = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[i] += 1e-6
            xm[i] -= 1e-6
            d6[i] = (float(f(xp)) - float(f(xm))) / 2e-6
        out[NG_IGNORES_EPS] = d6
    return out
