"""ex6 known mistakes: sinusoidal tables, learned embeddings and additions gone wrong.

Each function takes the test's own inputs and returns ``{cause: output}`` computed here, in
the grading process (float64), from the formula with one thing changed. Nothing here
imports the reference: a mistake is the formula written wrong, not a copy of the answer.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from autograder.diagnosis import Candidates
from autograder.diagnosis.causes import Cause
from autograder.suites.ex6_positional_encoding.causes import Ex6Cause

SWAPPED = Ex6Cause.SWAPPED
NOT_INTERLEAVED = Ex6Cause.NOT_INTERLEAVED
EXPONENT_I = Ex6Cause.EXPONENT_I
EXPONENT_COLUMN = Ex6Cause.EXPONENT_COLUMN
FROM_ONE = Ex6Cause.FROM_ONE
MULTIPLIED = Ex6Cause.MULTIPLIED
INTEGER_DIVISION = Ex6Cause.INTEGER_DIVISION
ODD_LAST_ZERO = Ex6Cause.ODD_LAST_ZERO
ODD_LAST_COS = Ex6Cause.ODD_LAST_COS
IN_FLOAT32 = Ex6Cause.IN_FLOAT32
LEARNED_FROM_ONE = Ex6Cause.LEARNED_FROM_ONE
LEARNED_ONLY_POS = Ex6Cause.LEARNED_ONLY_POS
LEARNED_WHOLE = Ex6Cause.LEARNED_WHOLE
ADD_REVERSED = Ex6Cause.ADD_REVERSED


def _angles(max_len: int, d_model: int, *, start: int = 0, exponent: str = "2i",
            multiply: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(sin-column angles, cos-column angles), float64, each (L, number of such columns)."""
    p = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    sin_cols = torch.arange(0, d_model, 2, dtype=torch.float64)
    cos_cols = torch.arange(1, d_model, 2, dtype=torch.float64)

    def scale(cols: torch.Tensor, partner: bool) -> torch.Tensor:
        two_i = cols - 1 if partner else cols                       # the pair's even column
        e = {"2i": two_i, "i": two_i / 2, "column": cols, "int": torch.zeros_like(cols)}[exponent]
        return torch.pow(10000.0, e / d_model)

    s, c = scale(sin_cols, False), scale(cos_cols, True)
    return (p * s, p * c) if multiply else (p / s, p / c)


def _interleave(sin_part: torch.Tensor, cos_part: torch.Tensor, d_model: int) -> torch.Tensor:
    out = torch.zeros(sin_part.shape[0], d_model, dtype=torch.float64)
    out[:, 0::2] = sin_part
    out[:, 1::2] = cos_part
    return out


def _table(max_len: int, d_model: int, **flags: Any) -> torch.Tensor:
    a_sin, a_cos = _angles(max_len, d_model, **flags)
    return _interleave(a_sin.sin(), a_cos.cos(), d_model)


def sinusoidal(max_len: int, d_model: int, dtype: torch.dtype = torch.float32) -> Candidates:
    """Known wrong ``sinusoidal_encoding(max_len, d_model, dtype)`` tables (float64)."""
    a_sin, a_cos = _angles(max_len, d_model)
    out: dict[str, torch.Tensor] = {}
    if d_model % 2 == 0:
        out[SWAPPED] = _interleave(a_sin.cos(), a_cos.sin(), d_model)
        out[NOT_INTERLEAVED] = torch.cat([a_sin.sin(), a_cos.cos()], dim=1)
    else:
        right = _table(max_len, d_model)
        out[ODD_LAST_ZERO] = torch.cat([right[:, :-1], torch.zeros(max_len, 1, dtype=torch.float64)], dim=1)
        out[ODD_LAST_COS] = torch.cat([right[:, :-1], a_sin[:, -1:].cos()], dim=1)
    out[EXPONENT_I] = _table(max_len, d_model, exponent="i")
    out[EXPONENT_COLUMN] = _table(max_len, d_model, exponent="column")
    out[FROM_ONE] = _table(max_len, d_model, start=1)
    out[MULTIPLIED] = _table(max_len, d_model, multiply=True)
    out[INTEGER_DIVISION] = _table(max_len, d_model, exponent="int")
    if dtype == torch.float64:
        out[IN_FLOAT32] = _float32_table(max_len, d_model)
    return out


def _float32_table(max_len: int, d_model: int) -> torch.Tensor:
    """The right table computed in float32, then converted to float64."""
    p = torch.arange(max_len, dtype=torch.float32)[:, None]
    w = torch.pow(torch.tensor(10000.0), -torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    a = p * w
    out = torch.zeros(max_len, d_model, dtype=torch.float32)
    out[:, 0::2] = a.sin()
    out[:, 1::2] = a[:, : d_model // 2].cos()
    return out.to(torch.float64)


def learned(x: Any, weight: Any) -> Candidates:
    """Known wrong ``LearnedPositionalEmbedding.forward(x)`` results, ``weight`` = pos.weight."""
    x = torch.as_tensor(x).detach().to(torch.float64)
    w = torch.as_tensor(weight).detach().to(torch.float64)
    n = x.shape[-2]
    out = {LEARNED_ONLY_POS: w[:n].expand_as(x).clone()}
    if n + 1 <= w.shape[0]:
        out[LEARNED_FROM_ONE] = x + w[1:n + 1]
    out[LEARNED_WHOLE] = x + w[:n].flip(0)
    return out


def added(x: Any, pe: Any) -> Candidates:
    """Known wrong ``add_positional_encoding(x, pe)`` results."""
    x = torch.as_tensor(x).detach().to(torch.float64)
    pe = torch.as_tensor(pe).detach().to(torch.float64)
    n = x.shape[-2]
    return {ADD_REVERSED: x + pe[pe.shape[0] - n:], Ex6Cause.ADD_ONLY_PE: pe[:n].expand_as(x).clone()}


def row_zero_hint(row: Any) -> Cause | None:
    """What a wrong first row (position 0) says: it must be [0, 1, 0, 1, …]."""
    r = torch.as_tensor(row).detach().to(torch.float64).flatten()
    if r.numel() >= 2 and math.isclose(float(r[0]), 1.0, abs_tol=1e-6) and math.isclose(float(r[1]), 0.0, abs_tol=1e-6):
        return SWAPPED
    if r.numel() >= 2 and math.isclose(float(r[0]), math.sin(1.0), abs_tol=1e-6):
        return FROM_ONE
    return None
