"""ex1 known mistakes: what a student's attention returns when it makes a common error.

Each function takes the test's own inputs and returns ``{hint: output}`` for
:func:`autograder.suites.checks.expect_close` (``mistakes=``). Everything is computed
here, in the grading process, with NumPy in float64; nothing runs in the worker.
The hints speak to the student in the course's terms.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograder.diagnosis import Candidates

# --------------------------------------------------------------------------- hints

NO_SCALE = ("your result matches attention *without* the 1/√d_k scaling: divide the scores "
            "Q Kᵀ by √d_k, with d_k = Q.shape[-1]")
SCALE_DV = ("your result matches attention scaled by √d_v instead of √d_k: d_k is the size of "
            "the queries and keys (Q.shape[-1]), not of the values")
SCALE_NO_SQRT = "your result matches attention scaled by 1/d_k instead of 1/√d_k: take the square root"
SCALE_M = ("your result matches attention scaled by the number of keys instead of √d_k: "
           "d_k is Q.shape[-1], the feature size")
WRONG_AXIS = ("your weights are normalised over the queries (axis -2) instead of over the keys "
              "(the last axis): each row of weights, one per query, must sum to 1")
INVERTED_MASK = ("your result matches attention with the mask inverted: in this course `True` "
                 "means *may attend*, so fill the scores where the mask is False")
MASK_AFTER = ("your result matches applying the mask *after* the softmax (zeroing weights without "
              "renormalising): fill the masked scores with -inf (or -1e9) *before* the softmax")
MASK_IGNORED = "your result matches attention with the mask ignored: masked keys must get weight 0"
MASK_ZERO = ("your result matches setting masked scores to 0 (e.g. scores * mask): a score of 0 "
             "still gets weight; fill masked scores with -inf or -1e9 instead")
TRANSPOSED = "your weights look transposed: weights[..., i, j] is how much query i attends to key j"
OUTPUT_IS_WEIGHTS_T = "your output matches weightsᵀ @ V: the output is weights @ V, shape (..., n, d_v)"

SOFTMAX_LAST_AXIS = ("your softmax normalises over the last axis whatever `axis` says: use the "
                     "`axis` argument in the max and in the sum")
SOFTMAX_GLOBAL = ("your softmax normalises over the whole array: sum along `axis` with "
                  "keepdims=True so that each slice sums to 1")
SOFTMAX_SUM_LAST = ("your softmax sums over the last axis whatever `axis` says: use axis=axis in the "
                    "sum (and in the max), with keepdims=True")
SOFTMAX_NO_SHIFT = ("exp overflows for large entries: subtract each slice's max along `axis` "
                    "(keepdims=True) before np.exp; softmax does not change under that shift")
SOFTMAX_GLOBAL_MAX = ("you subtract the max of the whole array: slices far below it underflow to 0/0; "
                      "subtract each slice's own max along `axis` (keepdims=True)")

BACK_NO_ROWSUM = ("your dQ/dK miss the second term of the softmax backward: with the Jacobian "
                  "diag(p) − p pᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P))")
BACK_NO_SCALE = "your dQ/dK miss the 1/√d_k factor: the scores were scaled in the forward pass"
BACK_MASK_IGNORED = ("your gradients ignore the mask: recompute the forward weights with the same "
                     "mask (masked weights are 0, so they pass no gradient)")
BACK_DV_NOT_T = "your dV matches P @ dO: it should be Pᵀ @ dO (weights transposed over the last two axes)"
BACK_DK_NOT_T = "your dK matches dS @ Q: it should be dSᵀ @ Q, scaled by 1/√d_k"
BACK_DQ_USES_V = "your dQ matches dS @ V: the scores are Q Kᵀ, so dQ = dS @ K / √d_k"

NG_FORWARD = ("your gradient matches forward differences (f(x+eps·e_i) − f(x)) / eps: use central "
              "differences (f(x+eps·e_i) − f(x−eps·e_i)) / (2·eps)")
NG_BACKWARD = ("your gradient matches backward differences (f(x) − f(x−eps·e_i)) / eps: use central "
               "differences (f(x+eps·e_i) − f(x−eps·e_i)) / (2·eps)")
NG_HALF = "your gradient is twice the central difference: divide by 2·eps, not by eps"
NG_PRECEDENCE = ("your gradient matches (f(x+eps·e_i) − f(x−eps·e_i)) / 2 * eps: Python reads that as "
                 "((…) / 2) * eps; write / (2 * eps)")
NG_IGNORES_EPS = "your gradient matches the default step 1e-6: use the `eps` argument you are given"


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


def softmax_nan_hint(got, x, axis: int = -1) -> str:
    """Name the unstable softmax whose NaN pattern ``got`` shares ("" if none does)."""
    try:
        nan = np.isnan(f64(got))
    except (TypeError, ValueError):
        return ""
    xa = f64(x)
    if nan.shape != xa.shape or not nan.any():
        return ""
    with np.errstate(all="ignore"):
        e = np.exp(xa)
        plain = e / e.sum(axis=axis, keepdims=True)
        g = np.exp(xa - np.max(xa))
        global_max = g / g.sum(axis=axis, keepdims=True)
    for hint, variant in ((SOFTMAX_NO_SHIFT, plain), (SOFTMAX_GLOBAL_MAX, global_max)):
        if np.array_equal(np.isnan(variant), nan):
            return hint
    return ""


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
    """Known wrong backward passes for dQ (``which=0``), dK (1) or dV (2)."""
    variants: list[tuple[str, dict]] = [(BACK_NO_ROWSUM, {"rowsum": False}),
                                        (BACK_NO_SCALE, {"scale": False})]
    if mask is not None:
        variants.append((BACK_MASK_IGNORED, {"use_mask": False}))
    variants += [(BACK_DV_NOT_T, {"dv_t": False}), (BACK_DK_NOT_T, {"dk_t": False}),
                 (BACK_DQ_USES_V, {"dq_k": False})]
    out: dict[str, np.ndarray] = {}
    for hint, flags in variants:
        try:
            out[hint] = _backward(dO, Q, K, V, mask, **flags)[which]
        except ValueError:                         # a variant that cannot even be formed here
            continue
    if which == 2:                                 # dV = Pᵀ dO with the weights of a wrong forward pass
        for hint, P in forward(Q, K, V, mask, "weights").items():
            if P.shape[-2:] == (f64(Q).shape[-2], f64(K).shape[-2]):
                out.setdefault(f"dV = weightsᵀ @ d_output uses wrong weights — {hint} "
                               "(fix scaled_dot_product_attention_np first)", np.swapaxes(P, -1, -2) @ f64(dO))
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
