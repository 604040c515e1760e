"""ex1 · softmax: values, the axis argument, numerical stability, inputs left alone."""
from __future__ import annotations

import numpy as np
import pytest

import reference.attention as ref
from autograder.diagnosis import ex1 as mistakes
from autograder.suites import checks, contract_rules
from autograder.suites.ex1_attention import common


@pytest.mark.points(1)
@pytest.mark.covers("softmax")
@pytest.mark.contract("softmax/sums-to-one", "softmax/signature")
def test_softmax_values_last_axis(student):
    """softmax along the last axis matches the reference"""
    x = common.rng(1).normal(size=(3, 4, 6)) * 3
    inputs = checks.describe_inputs(x=x)
    out = student.attention.softmax(x)
    checks.expect_shape(out, x.shape, "softmax(x)", inputs)
    common.expect_rows_sum_to_one(out, "softmax(x)", inputs, mistakes=lambda: mistakes.softmax_mistakes(x))
    checks.expect_close(out, ref.softmax(x), "softmax(x)", inputs=inputs, rtol=1e-7, atol=1e-10,
                        mistakes=lambda: mistakes.softmax_mistakes(x))


@pytest.mark.points(1)
@pytest.mark.parametrize("axis", [0, 1], ids=["axis=0", "axis=1"])
@pytest.mark.covers("softmax")
@pytest.mark.contract("softmax/sums-to-one", "softmax/signature")
@pytest.mark.covers("softmax:args/axis")
def test_softmax_along_axis(student, axis):
    """softmax normalises along the given axis of a 3-D array"""
    x = common.rng(2 + axis).normal(size=(4, 5, 3)) * 2
    inputs = checks.describe_inputs(x=x, axis=axis)
    out = student.attention.softmax(x, axis=axis)
    checks.expect_shape(out, x.shape, f"softmax(x, axis={axis})", inputs)
    common.expect_rows_sum_to_one(out, f"softmax(x, axis={axis})", inputs, axis=axis,
                                  mistakes=lambda: mistakes.softmax_mistakes(x, axis))
    checks.expect_close(out, ref.softmax(x, axis=axis), f"softmax(x, axis={axis})", inputs=inputs,
                        rtol=1e-7, atol=1e-10, mistakes=lambda: mistakes.softmax_mistakes(x, axis))


@pytest.mark.points(1)
@pytest.mark.covers("softmax")
@pytest.mark.contract("softmax/stable")
def test_softmax_stable_for_large_entries(student):
    """softmax is numerically stable for entries of magnitude 1e4"""
    r = common.rng(4)
    x = r.normal(size=(4, 6)) * 50
    x[0] += 1e4                                   # rows on very different scales:
    x[1] -= 1e4                                   # a global max would underflow these
    x[2, 3] = 1e4
    x[3] = np.array([-1e4, 1e4, 9999.0, -3.0, 0.0, 1e4])
    inputs = checks.describe_inputs(x=x) + ", entries up to ±1e4"
    out = student.attention.softmax(x)
    checks.expect_finite(out, "softmax(x)", inputs, mistakes.softmax_nan_hint(out, x))
    common.expect_rows_sum_to_one(out, "softmax(x)", inputs)
    checks.expect_close(out, ref.softmax(x), "softmax(x)", inputs=inputs, rtol=1e-7, atol=1e-10)


@pytest.mark.points(1)
@pytest.mark.covers("softmax")
@pytest.mark.contract("softmax/sums-to-one", "conventions/masked-fill")
def test_softmax_shift_invariant_and_masked_entries(student):
    """softmax is shift-invariant and gives -inf entries probability 0"""
    x = common.rng(5).normal(size=(3, 5))
    x[:, 1] = -np.inf
    x[2, 4] = -np.inf
    inputs = checks.describe_inputs(x=x) + ", some entries -inf"
    base = student.attention.softmax(x)
    checks.expect_finite(base, "softmax(x)", inputs)
    checks.expect_close(base, ref.softmax(x), "softmax(x)", inputs=inputs, rtol=1e-7, atol=1e-10)
    if (checks.as_array(base, "softmax(x)")[np.isneginf(x)] != 0).any():
        checks.fail(f"softmax(x): entries equal to -inf must get probability exactly 0 (inputs: {inputs})")
    shifted = student.attention.softmax(x + 700.0)
    checks.expect_close(shifted, base, "softmax(x + 700) compared with softmax(x)", inputs=inputs,
                        rtol=1e-7, atol=1e-10)


@pytest.mark.covers("softmax:inputs", "softmax")   # a crash fails it too: "(and runs)"
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
@pytest.mark.covers("softmax:inputs/ndarray")
def test_softmax_leaves_input_unchanged(student, support):
    """softmax does not modify its input (and runs)"""
    x = common.rng(6).normal(size=(3, 4))
    with checks.calling("attention.softmax"):
        out, changes = contract_rules.call_and_check_unchanged(support, student.attention.softmax, [x], {"axis": -1})
    common.expect_unchanged(changes, ["x"], "softmax")
    checks.expect_all_finite(out, "softmax(x)", checks.describe_inputs(x=x))   # runs: returns numbers                 # values: the other tests
