"""ex3 (multihead.py): known multi-head attention mistakes, rebuilt from the test's inputs.

``forward_mistakes`` runs a configurable multi-head attention (float64, in the grader)
with the same weights and inputs as the test, once per common mistake, and returns
{hint: output} (or weights) for ``checks.expect_close(..., mistakes=...)``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import torch

from autograder.diagnosis import Candidates

SPLIT_NO_TRANSPOSE = ("split_heads reshapes straight to (B, h, n, d_head): that cuts the "
                      "sequence, not the features, into heads. Reshape to (B, n, h, d_head) "
                      "and then transpose(1, 2)")
COMBINE_NO_TRANSPOSE = ("combine_heads reshapes (B, h, n, d_head) straight to (B, n, d_model) "
                        "without transposing back: transpose(1, 2) to (B, n, h, d_head) first, "
                        "then reshape (use .contiguous() or .reshape)")
SCALE_D_MODEL = ("the scores are scaled by √d_model; in multi-head attention each head's "
                 "dot products have d_head = d_model // h terms, so divide by √d_head")
SCALE_NONE = "the scores are not scaled: divide q kᵀ by √d_head before the softmax"
NO_W_O = "the output projection W_o is missing: output = W_o(combine_heads(heads))"
MASK_INVERTED = ("the mask is inverted: True means \"may attend\", so fill the scores where "
                 "the mask is False (masked_fill(~mask, -inf))")
SOFTMAX_AXIS = ("the softmax runs over the wrong axis: each query's weights over the keys "
                "must sum to 1 (softmax over the last axis, dim=-1)")
MASK_MULTIPLIED = ("the mask multiplies the scores, which makes masked scores 0 (still attended to), "
                   "not -inf: use scores.masked_fill(~mask, float('-inf')) (or -1e9)")
INTERLEAVED = ("the heads take every h-th feature instead of a contiguous block: head i owns "
               "features i·d_head … (i+1)·d_head − 1 (reshape to (B, n, h, d_head))")
MASK_AFTER = ("the mask is applied after the softmax (zeroing weights): mask the scores "
              "before the softmax so each row still sums to 1")
KV_SWAPPED = ("the keys are projected from `value` and the values from `key`: k = W_k(key), "
              "v = W_v(value)")
V_WITH_W_K = "the values are projected with W_k: v = W_v(value)"
V_FROM_KEY = ("the value projection is applied to the key tensor: v = W_v(value), not W_v(key) "
              "(in cross-attention the keys and the values are different inputs)")
K_FROM_VALUE = "the key projection is applied to the value tensor: k = W_k(key), not W_k(value)"
K_WITH_W_Q = "the keys are projected with W_q: k = W_k(key)"
KV_FROM_QUERY = ("the keys and values are computed from `query` (self-attention only): in "
                 "cross-attention k = W_k(key) and v = W_v(value)")
WEIGHTS_AVERAGED = ("the returned weights are averaged over the heads: return the per-head weights, "
                    "shape (B, h, n, m), as the docstring asks")
WEIGHTS_HEADS_MISSING = ("the returned weights have no head axis: return the per-head weights "
                         "(B, h, n, m), not an average, sum or a single head")


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


_VARIANTS: dict[str, dict[str, Any]] = {
    SPLIT_NO_TRANSPOSE: {"split_transpose": False, "combine_transpose": False},
    SPLIT_NO_TRANSPOSE + " (and combine_heads only undoes that reshape)": {"split_transpose": False},
    COMBINE_NO_TRANSPOSE: {"combine_transpose": False},
    SCALE_D_MODEL: {"scale": "d_model"},
    SCALE_NONE: {"scale": "none"},
    NO_W_O: {"use_w_o": False},
    MASK_INVERTED: {"invert_mask": True},
    SOFTMAX_AXIS: {"softmax_dim": -2},
    MASK_AFTER: {"mask_after_softmax": True},
    MASK_MULTIPLIED: {"multiply_mask": True},
    INTERLEAVED: {"split_transpose": "interleaved", "combine_transpose": "interleaved"},
    INTERLEAVED + " (in split_heads)": {"split_transpose": "interleaved"},
    KV_SWAPPED: {"projections": ("W_q", "query", "W_k", "value", "W_v", "key")},
    V_WITH_W_K: {"projections": ("W_q", "query", "W_k", "key", "W_k", "value")},
    K_WITH_W_Q: {"projections": ("W_q", "query", "W_q", "key", "W_v", "value")},
    V_FROM_KEY: {"projections": ("W_q", "query", "W_k", "key", "W_v", "key")},
    K_FROM_VALUE: {"projections": ("W_q", "query", "W_k", "value", "W_v", "value")},
    KV_FROM_QUERY: {"projections": ("W_q", "query", "W_k", "query", "W_v", "query")},
}


def forward_mistakes(state: Mapping[str, torch.Tensor], num_heads: int, query, key, value,
                     mask=None, which: str = "output") -> Candidates:
    """{hint: the output (``which="output"``) or weights (``"weights"``) of each mistake}."""
    out: dict[str, torch.Tensor] = {}
    for hint, flags in _VARIANTS.items():
        if mask is None and ({"invert_mask", "mask_after_softmax", "multiply_mask"} & set(flags)):
            continue
        if query.shape[1] != key.shape[1] and flags.get("projections", ("",) * 4)[3] == "query":
            continue                                   # cannot even be formed with n != m
        o, w = forward(state, num_heads, query, key, value, mask, **flags)
        out[hint] = o if which == "output" else w
    return out


def weights_shape_cause(got_shape: tuple[int, ...], state: Mapping[str, torch.Tensor], num_heads: int,
                        query, key, value, mask=None, got=None) -> str | None:
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
        "each head should hold a contiguous block of d_head features (head i: features "
        "i·d_head … (i+1)·d_head − 1), not every h-th feature":
            x.reshape(B, n, d // num_heads, num_heads).permute(0, 3, 1, 2),
    }


def combine_mistakes(x: torch.Tensor) -> Candidates:
    x = torch.as_tensor(x).to(torch.float64)
    B, h, n, d = x.shape
    return {
        COMBINE_NO_TRANSPOSE: _combine(x, transpose=False),
        "the heads' features are interleaved: head i's features belong at positions "
        "i·d_head … (i+1)·d_head − 1 (transpose(1, 2), then reshape)":
            x.permute(0, 2, 3, 1).reshape(B, n, h * d),
    }
