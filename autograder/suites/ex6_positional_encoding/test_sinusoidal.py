"""ex6 · sinusoidal_encoding: the paper's formula, dtype and device, and its invariants."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import reference.positional as ref
from autograder.diagnosis import ex6 as mistakes
from autograder.suites.ex6_positional_encoding.causes import Ex6Cause
from autograder.suites import checks, contract_rules
from autograder.suites.ex6_positional_encoding import common


@pytest.mark.points(3)
@pytest.mark.parametrize("max_len,d_model", [(50, 16), (37, 10)], ids=["50x16", "37x10"])
@pytest.mark.covers("sinusoidal_encoding")
@pytest.mark.contract("sinusoidal_encoding/formula", "sinusoidal_encoding/table", "positions")
@pytest.mark.covers("sinusoidal_encoding:dtype/float32")
def test_values_float32(student, max_len, d_model):
    """sinusoidal_encoding: the formula of "Attention Is All You Need", float32"""
    got = student.positional.sinusoidal_encoding(max_len, d_model)
    common.expect_table(got, max_len, d_model, torch.float32, f"sinusoidal_encoding({max_len}, {d_model})")


@pytest.mark.points(1.5)
@pytest.mark.parametrize("max_len,d_model", [(90, 7), (12, 1)], ids=["90x7", "12x1"])
@pytest.mark.covers("sinusoidal_encoding")
@pytest.mark.contract("sinusoidal_encoding/odd-width")
@pytest.mark.covers("sinusoidal_encoding:args/odd d_model")
def test_values_odd_width(student, max_len, d_model):
    """sinusoidal_encoding with an odd d_model: the last column is a sine"""
    got = student.positional.sinusoidal_encoding(max_len, d_model)
    common.expect_table(got, max_len, d_model, torch.float32, f"sinusoidal_encoding({max_len}, {d_model})")


@pytest.mark.covers("sinusoidal_encoding", "sinusoidal_encoding:dtype")
@pytest.mark.points(1.5)
@pytest.mark.contract("sinusoidal_encoding/table", "sinusoidal_encoding/signature")
@pytest.mark.covers("sinusoidal_encoding:dtype/float64")
def test_values_float64(student, support):
    """sinusoidal_encoding(…, dtype=torch.float64): float64 values, float64 accuracy"""
    got = common.table(student, support, 64, 12, dtype="float64")
    common.expect_table(got, 64, 12, torch.float64, "sinusoidal_encoding(64, 12, dtype=torch.float64)")


@pytest.mark.covers("sinusoidal_encoding", "sinusoidal_encoding:dtype")
@pytest.mark.points(0.5)
@pytest.mark.contract("sinusoidal_encoding/table", "sinusoidal_encoding/signature")
def test_each_call_gets_the_dtype_it_asks_for(student, support):
    """sinusoidal_encoding: calls of the same size in float64, float32, float64 each get their dtype"""
    for dtype in ("float64", "float32", "float64"):
        label = f"sinusoidal_encoding(9, 6, dtype=torch.{dtype}), after calls of the same size in other dtypes"
        got = common.expect_tensor(common.table(student, support, 9, 6, dtype=dtype), label)
        if got.dtype != getattr(torch, dtype):
            checks.fail(f"{label}: the table is {got.dtype}, expected torch.{dtype}. Each call returns a table "
                        "of its own dtype: is a table kept from an earlier call (a cache keyed by the sizes only)?")
        common.expect_table(got, 9, 6, getattr(torch, dtype), label)


@pytest.mark.covers("sinusoidal_encoding:device")
@pytest.mark.points(0.5)
@pytest.mark.contract("sinusoidal_encoding/table", "sinusoidal_encoding/signature")
def test_device_argument(student, support):
    """sinusoidal_encoding accepts a device argument"""
    plain = common.expect_tensor(student.positional.sinusoidal_encoding(6, 4), "sinusoidal_encoding(6, 4)")
    common.expect_table(plain, 6, 4, torch.float32, "sinusoidal_encoding(6, 4)")   # judged on a right table
    for kwargs, devices, label in [({"device": "cpu"}, None, "sinusoidal_encoding(6, 4, device='cpu')"),
                                   ({}, {"device": "cpu"}, "sinusoidal_encoding(6, 4, device=torch.device('cpu'))"),
                                   ({"device": None}, None, "sinusoidal_encoding(6, 4, device=None)")]:
        with checks.calling("positional.sinusoidal_encoding"):
            got = support.arguments.call(student.positional.sinusoidal_encoding, [6, 4], kwargs, None, devices)
        got = common.expect_tensor(got, label)
        if got.device.type != "cpu":
            checks.fail(f"{label}: the table is on {got.device}, expected cpu")
        if got.dtype != plain.dtype or tuple(got.shape) != tuple(plain.shape) or not torch.equal(got, plain):
            checks.fail(f"{label} differs from sinusoidal_encoding(6, 4): the device argument must "
                        "change only where the table lives, not what it holds")
    # and the table is made where it is asked for: PyTorch's meta device (shapes, no data)
    contract_rules.expect_on_meta(support, student.positional.sinusoidal_encoding,
                                  "sinusoidal_encoding(6, 4, device='meta')", [6, 4], kwargs={"device": "meta"},
                                  which=[], outputs=["the table"], dtype="float32", shapes=[(6, 4)])
    # (no likely cause: a table on the CPU is the unused argument or a table kept from a call before)


@pytest.mark.points(1)
@pytest.mark.covers("sinusoidal_encoding")
@pytest.mark.contract("sinusoidal_encoding/formula")
def test_bounded(student):
    """sinusoidal_encoding: every entry within [-1, 1]"""
    got = common.expect_tensor(student.positional.sinusoidal_encoding(100, 24), "sinusoidal_encoding(100, 24)")
    arr = checks.as_array(got, "sinusoidal_encoding(100, 24)")
    checks.expect_finite(arr, "sinusoidal_encoding(100, 24)", "max_len=100, d_model=24")
    worst = float(np.abs(arr).max()) if arr.size else 0.0
    if worst > 1.0 + 1e-6:
        checks.fail(f"sinusoidal_encoding(100, 24): entries reach {worst:.3g} in absolute value; "
                    "sines and cosines stay within [-1, 1]",
                    Ex6Cause.NOT_ONLY_SIN_COS)
    common.expect_table(got, 100, 24, torch.float32, "sinusoidal_encoding(100, 24)")   # bounded and right


@pytest.mark.points(1.5)
@pytest.mark.parametrize("k", [1, 5, 13], ids=["k=1", "k=5", "k=13"])
@pytest.mark.covers("sinusoidal_encoding")
@pytest.mark.contract("sinusoidal_encoding/formula")
def test_relative_positions(student, support, k):
    """sinusoidal_encoding: PE[p + k] is one fixed rotation of PE[p], for every p"""
    max_len, d_model = 48, 16
    got = common.expect_tensor(common.table(student, support, max_len, d_model, dtype="float64"),
                               f"sinusoidal_encoding({max_len}, {d_model}, dtype=torch.float64)")
    checks.expect_shape(got, (max_len, d_model), "the table", f"max_len={max_len}, d_model={d_model}")
    pe = got.detach().to(torch.float64)
    _expect_unit_pairs(pe, max_len, d_model, lambda: mistakes.sinusoidal(max_len, d_model, torch.float64))
    moved = pe[:-k] @ ref.offset_matrix(k, d_model).T                  # M_k PE[p], every p
    diff = (moved - pe[k:]).abs()
    if not torch.isfinite(diff).all() or float(diff.max()) > 1e-4:       # float32-level errors pass
        worst = float(diff.nan_to_num(float("inf")).max())
        checks.fail(f"shifting every position by k={k}: PE[p + {k}] is not the block-diagonal rotation "
                    f"M_{k} (one 2×2 rotation by {k}·ω_i per column pair (2i, 2i+1)) applied to PE[p]; "
                    f"largest difference {worst:.3g}",
                    checks.likely_cause(pe, lambda: mistakes.sinusoidal(max_len, d_model, torch.float64)))


def _expect_unit_pairs(pe: torch.Tensor, max_len: int, d_model: int, known) -> None:
    """The rotation property is judged on a table that is made of rotations: each column pair
    (2i, 2i+1) is (sin, cos) of one angle, so sin² + cos² = 1 at every position (a table of
    zeros or constants satisfies PE[p + k] = M_k PE[p] without being an encoding)."""
    pairs = pe[:, : d_model - d_model % 2].reshape(max_len, -1, 2)
    norms = pairs.pow(2).sum(-1)
    worst = float((norms - 1).abs().nan_to_num(float("inf")).max())
    if not worst <= 1e-4:
        checks.fail(f"sinusoidal_encoding({max_len}, {d_model}): the column pairs (2i, 2i+1) are not a sine "
                    f"and a cosine of one angle (sin² + cos² = 1); largest distance from 1: {worst:.3g}",
                    checks.likely_cause(pe, known))