"""ex6 · LearnedPositionalEmbedding: structure, values, gradients, the length limit."""
from __future__ import annotations

import pytest
import torch

from autograder.diagnosis.causes import General
from autograder.suites import checks, contract_rules
from autograder.suites.ex6_positional_encoding import common

MAX_LEN, D_MODEL = 10, 6


def _module(student, support, offset: int):
    return common.learned_module(student, support, offset, MAX_LEN, D_MODEL)


@pytest.mark.points(1)
@pytest.mark.covers("LearnedPositionalEmbedding")
@pytest.mark.contract("LearnedPositionalEmbedding/structure", "LearnedPositionalEmbedding/init")
@pytest.mark.covers("LearnedPositionalEmbedding.__init__:structure")
def test_structure(student, support):
    """LearnedPositionalEmbedding: exactly pos = nn.Embedding(max_len, d_model)"""
    info = support.modules.describe(student.positional.LearnedPositionalEmbedding(7, 5))
    if not info.get("is_module"):
        checks.fail(f"LearnedPositionalEmbedding(7, 5) is a {info['type']}, not an nn.Module")
    if info["children"] != {"pos": "Embedding"} or info["parameters"] != {"pos.weight": [7, 5]}:
        checks.fail(f"LearnedPositionalEmbedding(7, 5): expected one submodule pos = nn.Embedding(7, 5) "
                    f"and no other parameter; found submodules {info['children']} and parameters "
                    f"{info['parameters']}")
    module, weight = _module(student, support, 25)                      # the structure is the one forward uses
    x = common.randn(26, 1, 3, D_MODEL)
    with checks.calling("LearnedPositionalEmbedding.forward"):
        common.expect_learned(module(x), x, weight, "forward(x) with loaded weights")


@pytest.mark.points(2)
@pytest.mark.parametrize("n", [4, MAX_LEN], ids=["n=4", "n=max_len"])
@pytest.mark.covers("LearnedPositionalEmbedding")
@pytest.mark.contract("LearnedPositionalEmbedding/forward", "positions")
@pytest.mark.covers("LearnedPositionalEmbedding.forward:dtype/float32")
def test_forward_values(student, support, n):
    """LearnedPositionalEmbedding.forward adds pos(0 … n−1) to x"""
    module, weight = _module(student, support, 10 + n)
    x = common.randn(20 + n, 3, n, D_MODEL)
    inputs = checks.describe_inputs(x=x) + f", max_len={MAX_LEN}"
    with checks.calling("LearnedPositionalEmbedding.forward"):
        out = module(x)
    common.expect_tensor(out, "forward(x)")
    checks.expect_shape(out, (3, n, D_MODEL), "forward(x)", inputs)
    checks.expect_dtype(out, torch.float32, "forward(x)")
    common.expect_learned(out, x, weight, "forward(x)")


@pytest.mark.points(0.5)
@pytest.mark.covers("LearnedPositionalEmbedding")
@pytest.mark.contract("LearnedPositionalEmbedding/forward", "positions")
def test_one_module_many_lengths(student, support):
    """one LearnedPositionalEmbedding called with n = 3, then 7, then 5 adds pos(0 … n−1) each time"""
    module, weight = _module(student, support, 40)
    for n in (3, 7, 5):
        x = common.randn(41 + n, 2, n, D_MODEL)
        what = f"forward(x) with n = {n}, after calls with other lengths (the same module)"
        inputs = checks.describe_inputs(x=x) + f", max_len={MAX_LEN}"
        with checks.calling("LearnedPositionalEmbedding.forward"):
            out = module(x)
        common.expect_tensor(out, what)
        checks.expect_shape(out, (2, n, D_MODEL), what, inputs)
        common.expect_learned(out, x, weight, what)


@pytest.mark.covers("LearnedPositionalEmbedding:inputs")
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
@pytest.mark.covers("LearnedPositionalEmbedding.forward:inputs/tensor")
def test_input_unchanged(student, support):
    """LearnedPositionalEmbedding.forward leaves x unchanged"""
    module, weight = _module(student, support, 30)
    x = common.randn(31, 2, 5, D_MODEL)
    with checks.calling("LearnedPositionalEmbedding.forward"):
        got, changes = contract_rules.call_and_check_unchanged(support, module, [x])
    common.expect_unchanged(changes, ["x"], "LearnedPositionalEmbedding.forward")
    common.expect_learned(got, x, weight, "forward(x)")                       # and it adds


@pytest.mark.covers("LearnedPositionalEmbedding:dtype")
@pytest.mark.points(1)
@pytest.mark.contract("conventions/dtype")
@pytest.mark.covers("LearnedPositionalEmbedding.forward:dtype/float64")
def test_float64(student, support):
    """LearnedPositionalEmbedding after .double(): float64 in, float64 out"""
    module, weight = _module(student, support, 40)
    module.double()
    x = common.randn(41, 2, 7, D_MODEL, dtype=torch.float64)
    with checks.calling("LearnedPositionalEmbedding.forward"):
        out = module(x)
    common.expect_tensor(out, "forward(x) in float64")
    checks.expect_dtype(out, torch.float64, "forward(x) in float64")
    # judged on a result that is right: x + pos.weight[:n] (the loaded weights, in float64)
    common.expect_learned(out, x, weight, "forward(x) in float64")


@pytest.mark.points(1.5)
@pytest.mark.covers("LearnedPositionalEmbedding")
@pytest.mark.contract("conventions/differentiable")
@pytest.mark.covers("LearnedPositionalEmbedding.forward:grad")
def test_gradients(student, support):
    """LearnedPositionalEmbedding: gradients reach x and pos.weight (rows 0 … n−1 only)"""
    module, _ = _module(student, support, 50)
    n, x = 6, common.randn(51, 3, 6, D_MODEL)
    g = common.randn(52, 3, n, D_MODEL)
    with checks.calling("LearnedPositionalEmbedding.forward"):
        params = support.modules.parameter_grads(module, [x], {}, g, None)
        (dx,) = support.modules.input_grads(module, [x], {}, [0], g, None)
    got = params.get("pos.weight") if isinstance(params, dict) else None
    if got is None or dx is None:
        checks.fail("no gradient reached " + ("pos.weight" if got is None else "x") + " through forward(x)",
                    General.DETACHED)
    want = torch.zeros(MAX_LEN, D_MODEL, dtype=torch.float64)
    want[:n] = g.double().sum(0)
    checks.expect_close(got, want, "d(sum(g * forward(x))) / d pos.weight", rtol=1e-5, atol=1e-5,
                        inputs=f"x {tuple(x.shape)}, max_len={MAX_LEN}")
    checks.expect_close(dx, g, "d(sum(g * forward(x))) / d x", rtol=1e-5, atol=1e-6,
                        inputs=f"x {tuple(x.shape)}")


@pytest.mark.covers("LearnedPositionalEmbedding:length")
@pytest.mark.points(1)
@pytest.mark.contract("LearnedPositionalEmbedding/raises")
@pytest.mark.covers("LearnedPositionalEmbedding.forward:raises")
def test_too_long(student, support):
    """LearnedPositionalEmbedding raises ValueError when n > max_len"""
    module, weight = _module(student, support, 60)
    fits = common.randn(61, 2, MAX_LEN, D_MODEL)
    with checks.calling("LearnedPositionalEmbedding.forward"):           # the rule needs a working n <= max_len
        common.expect_learned(module(fits), fits, weight, f"forward(x) with n={MAX_LEN}")
    x = common.randn(60, 2, MAX_LEN + 1, D_MODEL)
    common.expect_value_error(lambda: module(x), f"forward(x) with n={MAX_LEN + 1} > max_len={MAX_LEN}",
                              "n > max_len")
