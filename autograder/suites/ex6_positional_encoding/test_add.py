"""ex6 · add_positional_encoding: broadcasting, dtype, device, gradients, inputs kept."""
from __future__ import annotations

import pytest
import torch

import reference.positional as ref
from autograder.diagnosis.causes import General
from autograder.suites import checks, contract_rules
from autograder.suites.ex6_positional_encoding import common


@pytest.mark.points(2)
@pytest.mark.parametrize("shape", [(4, 7, 8), (7, 8), (2, 3, 5, 8)], ids=["B,n,d", "n,d", "2 leading dims"])
@pytest.mark.covers("add_positional_encoding")
@pytest.mark.contract("add_positional_encoding/sum", "add_positional_encoding/signature")
@pytest.mark.covers("add_positional_encoding:dtype/float32", "add_positional_encoding:lead/0, 1, several")
def test_values(student, shape):
    """add_positional_encoding: x + pe[:n], broadcast over the leading dims"""
    x = common.randn(70 + len(shape), *shape)
    pe = ref.sinusoidal_encoding(11, 8)
    got = student.positional.add_positional_encoding(x, pe)
    common.expect_sum(got, x, pe, "add_positional_encoding(x, pe)", torch.float32)


@pytest.mark.covers("add_positional_encoding:dtype")
@pytest.mark.points(1)
@pytest.mark.parametrize("x_dtype,pe_dtype", [(torch.float64, torch.float64), (torch.float32, torch.float64),
                                              (torch.float64, torch.float32)],
                         ids=["f64+f64", "f32+f64", "f64+f32"])
@pytest.mark.contract("add_positional_encoding/sum", "conventions/dtype")
@pytest.mark.covers("add_positional_encoding:dtype/float64")
def test_dtype(student, x_dtype, pe_dtype):
    """add_positional_encoding keeps x's dtype whatever pe's"""
    # Judged: the dtype, on a result that is right (x + pe[:n] in x's dtype): keeping x's
    # dtype is worth nothing on a result that ignores pe.
    x = common.randn(80, 2, 5, 6, dtype=x_dtype)
    pe = ref.sinusoidal_encoding(9, 6, dtype=pe_dtype)
    what = f"add_positional_encoding(x {x_dtype}, pe {pe_dtype})"
    got = common.expect_tensor(student.positional.add_positional_encoding(x, pe), what)
    checks.expect_shape(got, tuple(x.shape), what, checks.describe_inputs(x=x, pe=pe))
    checks.expect_dtype(got, x_dtype, what)
    common.expect_sum(got, x, pe, what, x_dtype)


@pytest.mark.covers("add_positional_encoding:device")
@pytest.mark.points(0.5)
@pytest.mark.contract("add_positional_encoding/sum")
def test_device(student):
    """add_positional_encoding: the result is on x's device"""
    x = common.randn(85, 2, 3, 4)
    got = common.expect_tensor(student.positional.add_positional_encoding(x, ref.sinusoidal_encoding(5, 4)),
                               "add_positional_encoding(x, pe)")
    if got.device != x.device:
        checks.fail(f"add_positional_encoding(x, pe): the result is on {got.device}, x on {x.device}")
    common.expect_sum(got, x, ref.sinusoidal_encoding(5, 4), "add_positional_encoding(x, pe)", torch.float32)


@pytest.mark.covers("add_positional_encoding:inputs")
@pytest.mark.points(1)
@pytest.mark.contract("conventions/inputs", "general-conventions")
@pytest.mark.covers("add_positional_encoding:inputs/tensor")
def test_inputs_unchanged(student, support):
    """add_positional_encoding leaves x and pe unchanged"""
    x = common.randn(90, 3, 4, 6)
    pe = ref.sinusoidal_encoding(4, 6)                           # n == L: a view of pe would alias
    with checks.calling("positional.add_positional_encoding"):
        got, changes = contract_rules.call_and_check_unchanged(support, student.positional.add_positional_encoding, [x, pe])
    common.expect_unchanged(changes, ["x", "pe"], "add_positional_encoding")
    common.expect_sum(got, x, pe, "add_positional_encoding(x, pe)", torch.float32)     # and it adds


@pytest.mark.points(1)
@pytest.mark.covers("add_positional_encoding")
@pytest.mark.contract("conventions/differentiable", "general-conventions")
@pytest.mark.covers("add_positional_encoding:grad")
def test_gradients(student, support):
    """add_positional_encoding: differentiable with respect to x and pe"""
    x = common.randn(95, 3, 4, 6)
    pe = common.randn(96, 7, 6)
    g = common.randn(97, 3, 4, 6)
    with checks.calling("positional.add_positional_encoding"):
        result = support.autograd.grads(student.positional.add_positional_encoding, [x, pe], {}, [g])
    dx, dpe = result["grads"]
    if result["error"] or dx is None or dpe is None:
        checks.fail("no gradient reached " + ("x" if dx is None else "pe") + " through add_positional_encoding"
                    + (f" ({result['error']})" if result["error"] else ""),
                    General.DETACHED)
    want = torch.zeros(7, 6, dtype=torch.float64)
    want[:4] = g.double().sum(0)
    checks.expect_close(dx, g, "d(sum(g * out)) / d x", rtol=1e-5, atol=1e-6, inputs="x (3, 4, 6), pe (7, 6)")
    checks.expect_close(dpe, want, "d(sum(g * out)) / d pe", rtol=1e-5, atol=1e-5, inputs="x (3, 4, 6), pe (7, 6)")


@pytest.mark.covers("add_positional_encoding:length")
@pytest.mark.points(0.5)
@pytest.mark.contract("add_positional_encoding/raises")
@pytest.mark.covers("add_positional_encoding:raises")
def test_too_long(student):
    """add_positional_encoding raises ValueError when n > L"""
    x, pe = common.randn(99, 1, 6, 4), ref.sinusoidal_encoding(5, 4)
    with checks.calling("positional.add_positional_encoding"):         # the rule needs a working n <= L
        common.expect_sum(student.positional.add_positional_encoding(x[:, :5], pe), x[:, :5], pe,
                          "add_positional_encoding(x with n=5, pe with L=5)", torch.float32)
    common.expect_value_error(lambda: student.positional.add_positional_encoding(x, pe),
                              "add_positional_encoding(x with n=6, pe with L=5)", "n > L")
