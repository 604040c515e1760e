"""ex3 (multihead.py): known multi-head attention mistakes, rebuilt from the test's inputs.

``forward_mistakes`` runs a configurable multi-head attention (float64, in the grader)
with the same weights and inputs as the test, once per common mistake, and returns
(cause, output) pairs (or weights) for ``checks.expect_close(..., mistakes=...)``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import torch

from autograder.diagnosis import Candidates
from autograder.diagnosis.causes import Cause
from autograder.suites.ex3_multihead.causes import Ex3Cause

SPLIT_NO_TRANSPOSE = Ex3Cause.SPLIT_NO_TRANSPOSE
COMBINE_NO_TRANSPOSE = Ex3Cause.COMBINE_NO_TRANSPOSE
SCALE_D_MODEL = Ex3Cause.SCALE_D_MODEL
SCALE_NONE = Ex3Cause.NO_SCALE
NO_W_O = Ex3Cause.NO_W_O
MASK_INVERTED = Ex3Cause.MASK_INVERTED
SOFTMAX_AXIS = Ex3Cause.SOFTMAX_AXIS
MASK_MULTIPLIED = Ex3Cause.MASK_MULTIPLIED
INTERLEAVED = Ex3Cause.INTERLEAVED
MASK_AFTER = Ex3Cause.MASK_AFTER
KV_SWAPPED = Ex3Cause.KV_SWAPPED
V_WITH_W_K = Ex3Cause.V_WITH_W_K
V_FROM_KEY = Ex3Cause.V_FROM_KEY
K_FROM_VALUE = Ex3Cause.K_FROM_VALUE
K_WITH_W_Q = Ex3Cause.K_WITH_W_Q
KV_FROM_QUERY = Ex3Cause.KV_FROM_QUERY
WEIGHTS_AVERAGED = Ex3Cause.WEIGHTS_AVERAGED
WEIGHTS_HEADS_MISSING = Ex3Cause.WEIGHTS_HEADS_MISSING


def _split(x: torch.Tensor, h: int, transpose: bool | str = True) -> torch.Tensor:
    B, n, d = x.shape
    if transpose == "interleaved":
        return x.reshape(B, n, d // h, h).permute(0, 3, 1, 2)
    if transpose:
        return x.reshape(B, n, h, d // h).transpose(1, 2)
    return x.reshape(B, h, n, d // h)


def _combine(x: torch.Tensor, transpose: bool | str = True) -> torch.Tensor:
    B, h, n, d = x.shape
    if transpose == "interleaved":
        return x.permute(0, 2, 3, 1).reshape(B, n, h * d)
    if transpose:
        return x.transpose(1, 2).reshape(B, n, h * d)
    return x.reshape(B, n, h * d)


def _linear(state: Mapping[str, torch.Tensor], name: str, x: torch.Tensor) -> torch.Tensor:
    w = state[f"{name}.weight"].to(torch.float64)
    b = state.get(f"{name}.bias")
    return torch.nn.functional.linear(x, w, None if b is None else b.to(torch.float64))


def forward(state: Mapping[str, torch.Tensor], num_heads: int, query, key, value, mask=None, *,
            split_transpose: bool = True, combine_transpose: bool = True, scale: str = "d_head",
            use_w_o: bool = True, invert_mask: bool = False, softmax_dim: int = -1,
            mask_after_softmax: bool = False, multiply_mask: bool = False,
            projections: tuple[str, str, str, str, str, str] = ("W_q", "query", "W_k", "key", "W_v", "value"),
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-head attention in float64 with one mistake switched on (or none).

    ``split_transpose`` / ``combine_transpose``: True (correct), False (reshape without
    transposing) or "interleaved" (head i takes every h-th feature)."""
    query, key, value = (torch.as_tensor(t).to(torch.float64) for t in (query, key, value))
    h = num_heads
    d_model = query.shape[-1]
    source = {"query": query, "key": key, "value": value}
    (wq, sq), (wk, sk), (wv, sv) = (projections[i:i + 2] for i in (0, 2, 4))
    q = _split(_linear(state, wq, source[sq]), h, split_transpose)
    k = _split(_linear(state, wk, source[sk]), h, split_transpose)
    v = _split(_linear(state, wv, source[sv]), h, split_transpose)
    divisor = {"d_head": math.sqrt(d_model // h), "d_model": math.sqrt(d_model), "none": 1.0}[scale]
    scores = q @ k.transpose(-2, -1) / divisor
    allowed = None
    if mask is not None:
        allowed = torch.as_tensor(mask, dtype=torch.bool)
        if invert_mask:
            allowed = ~allowed
    if allowed is not None and multiply_mask:
        scores = scores * allowed
    elif allowed is not None and not mask_after_softmax:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=softmax_dim)
    if allowed is not None and mask_after_softmax:
        weights = weights.masked_fill(~allowed, 0.0)
    heads = weights @ v
    out = _combine(heads, combine_transpose)
    if use_w_o:
        out = _linear(state, "W_o", out)
    return out, weights


_VARIANTS: list[tuple[Cause, dict[str, Any]]] = [
    (SPLIT_NO_TRANSPOSE, {"split_transpose": False, "combine_transpose": False}),
    (SPLIT_NO_TRANSPOSE, {"split_transpose": False}),          # combine_heads only undoes that reshape
    (COMBINE_NO_TRANSPOSE, {"combine_transpose": False}),
    (SCALE_D_MODEL, {"scale": "d_model"}),
    (SCALE_NONE, {"scale": "none"}),
    (NO_W_O, {"use_w_o": False}),
    (MASK_INVERTED, {"invert_mask": True}),
    (SOFTMAX_AXIS, {"softmax_dim": -2}),
    (MASK_AFTER, {"mask_after_softmax": True}),
    (MASK_MULTIPLIED, {"multiply_mask": True}),
    (INTERLEAVED, {"split_transpose": "interleaved", "combine_transpose": "interleaved"}),
    (INTERLEAVED, {"split_transpose": "interleaved"}),         # in split_heads only
    (KV_SWAPPED, {"projections": ("W_q", "query", "W_k", "value", "W_v", "key")}),
    (V_WITH_W_K, {"projections": ("W_q", "query", "W_k", "key", "W_k", "value")}),
    (K_WITH_W_Q, {"projections": ("W_q", "query", "W_q", "key", "W_v", "value")}),
    (V_FROM_KEY, {"projections": ("W_q", "query", "W_k", "key", "W_v", "key")}),
    (K_FROM_VALUE, {"projections": ("W_q", "query", "W_k", "value", "W_v", "value")}),
    (KV_FROM_QUERY, {"projections": ("W_q", "query", "W_k", "query", "W_v", "query")}),
]


def forward_mistakes(state: Mapping[str, torch.Tensor], num_heads: int, query, key, value,
                     mask=None, which: str = "output") -> Candidates:
    """(cause, the output (``which="output"``) or weights (``"weights"``)) of each mistake."""
    out: list[tuple[Cause, torch.Tensor]] = []
    for cause, flags in _VARIANTS:
        if mask is None and ({"invert_mask", "mask_after_softmax", "multiply_mask"} & set(flags)):
            continue
        if query.shape[1] != key.shape[1] and flags.get("projections", ("",) * 4)[3] == "query":
            continue                                   # cannot even be formed with n != m
        o, w = forward(state, num_heads, query, key, value, mask, **flags)
        out.append((cause, o if which == "output" else w))
    return out


def weights_shape_cause(got_shape: tuple[int, ...], state: Mapping[str, torch.Tensor], num_heads: int,
                        query, key, value, mask=None, got=None) -> Cause | None:
    """Why the weights came back as (B, n, m), or (B, h, n, n) with m != n keys, where
    (B, h, n, m) was due."""
    B, n, m = query.shape[0], query.shape[1], key.shape[1]
    if m != n and tuple(got_shape) == (B, num_heads, n, n):
        return KV_FROM_QUERY
    if tuple(got_shape) != (B, n, m):
        return None
    if got is not None:
        _, w = forward(state, num_heads, query, key, value, mask)
        mean = w.mean(dim=1)
        got64 = torch.as_tensor(got).detach().to(torch.float64)
        if torch.allclose(got64, mean, rtol=1e-4, atol=1e-5):
            return WEIGHTS_AVERAGED
    return WEIGHTS_HEADS_MISSING


def split_mistakes(x: torch.Tensor, num_heads: int) -> Candidates:
    x = torch.as_tensor(x).to(torch.float64)
    B, n, d = x.shape
    return {
        SPLIT_NO_TRANSPOSE: _split(x, num_heads, transpose=False),
        INTERLEAVED: x.reshape(B, n, d // num_heads, num_heads).permute(0, 3, 1, 2),
    }


def combine_mistakes(x: torch.Tensor) -> Candidates:
    x = torch.as_tensor(x).to(torch.float64)
    B, h, n, d = x.shape
    return {
        COMBINE_NO_TRANSPOSE: _combine(x, transpose=False),
        INTERLEAVED: x.permute(0, 2, 3, 1).reshape(B, n, h * d),
    }
