"""ex3 · MultiHeadAttention's structure: the four projections, bias on/off, ValueError, banned APIs."""
from __future__ import annotations

import pytest

from autograder.suites.ex3_multihead.causes import Ex3Cause
from autograder.diagnosis.causes import General
from autograder.sandbox import NotImplementedByStudent, StudentError
from autograder.suites.checks import expect_no_banned_apis, fail
from autograder.suites.ex3_multihead import common
from autograder.suites.ex3_multihead.common import expect_uses_loaded_weights

pytestmark = pytest.mark.covers("MultiHeadAttention")

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


def _expect_parameters(info: dict, d: int, bias: bool, what: str) -> None:
    if not info.get("is_module"):
        fail(f"{what} is a {info.get('type')}, not a torch.nn.Module (subclass nn.Module)")
    children = info["children"]
    missing = [p for p in PROJECTIONS if p not in children]
    if missing:
        fail(f"{what} has no submodule(s) {', '.join(missing)}; its submodules are "
             f"{sorted(children)[:10]}. Name the projections exactly W_q, W_k, W_v, W_o "
             "(the grader loads weights by these names)")
    wrong = {p: children[p] for p in PROJECTIONS if children[p] != "Linear"}
    if wrong:
        fail(f"{what}: W_q, W_k, W_v and W_o should each be an nn.Linear; got "
             + ", ".join(f"{k}: {v}" for k, v in wrong.items()))
    want = {}
    for p in PROJECTIONS:
        want[f"{p}.weight"] = [d, d]
        if bias:
            want[f"{p}.bias"] = [d]
    got = info["parameters"]
    extra = sorted(set(got) - set(want))
    lacking = sorted(set(want) - set(got))
    if lacking:
        fail(f"{what}: missing parameter(s) {lacking[:8]}"
             + ("; pass bias=bias on to every nn.Linear" if all(x.endswith(".bias") for x in lacking) else ""))
    if extra:
        fail(f"{what}: unexpected parameter(s) {extra[:8]}: the module should have only "
             "the weights (and biases, when bias=True) of W_q, W_k, W_v, W_o"
             + ("; pass bias=bias on to every nn.Linear" if all(x.endswith(".bias") for x in extra) else ""),
             cause=Ex3Cause.BIAS_IGNORED)
    bad = {k: got[k] for k in want if list(got[k]) != want[k]}
    if bad:
        fail(f"{what}: parameter shapes should be (d_model, d_model) for weights and "
             f"(d_model,) for biases; got " + ", ".join(f"{k} {tuple(v)}" for k, v in bad.items()))
    total = 4 * d * d + (4 * d if bias else 0)
    if info["n_parameters"] != total:
        fail(f"{what}: expected {total} parameters in all, got {info['n_parameters']}")


@pytest.mark.points(2.5)
@pytest.mark.contract("MultiHeadAttention/structure", "MultiHeadAttention/init")
@pytest.mark.covers("MultiHeadAttention.__init__:structure")
def test_parameters(student, support):
    """has exactly the projections W_q, W_k, W_v, W_o (nn.Linear with bias), nothing else"""
    model = student.multihead.MultiHeadAttention(16, 4)
    _expect_parameters(support.modules.describe(model), 16, True, "MultiHeadAttention(16, 4)")
    expect_uses_loaded_weights(support, model, "MultiHeadAttention(16, 4)", 16, 4)


@pytest.mark.points(1)
@pytest.mark.contract("MultiHeadAttention/structure", "MultiHeadAttention/init")
@pytest.mark.covers("MultiHeadAttention.__init__:args/bias")
def test_parameters_without_bias(student, support):
    """bias=False: the four projections have weights only"""
    model = student.multihead.MultiHeadAttention(16, 2, bias=False)
    _expect_parameters(support.modules.describe(model), 16, False,
                       "MultiHeadAttention(16, 2, bias=False)")
    expect_uses_loaded_weights(support, model, "MultiHeadAttention(16, 2, bias=False)", 16, 2, bias=False)


@pytest.mark.points(1.5)
@pytest.mark.contract("MultiHeadAttention/raises")
@pytest.mark.covers("MultiHeadAttention.__init__:raises")
def test_value_error(student, support):
    """raises ValueError when d_model is not divisible by num_heads (and builds a working one when it is)"""
    for d, h in ((10, 3), (12, 5)):
        what = f"MultiHeadAttention({d}, {h})"
        try:
            student.multihead.MultiHeadAttention(d, h)
        except NotImplementedByStudent:
            raise
        except StudentError as exc:
            kind = exc.raised
            if kind != "ValueError":
                fail(f"{what} should raise ValueError ({d} is not divisible by {h}); it raised "
                     f"{kind or 'an error'}",
                     General.ASSERT_FOR_VALUE_ERROR if kind == "AssertionError" else None)
        else:
            fail(f"{what} should raise ValueError ({d} is not divisible by {h}) but raised nothing",
                 cause=Ex3Cause.NO_DIVISIBILITY_CHECK)
    # the points are for a check in a working module, not for a constructor that only raises
    expect_uses_loaded_weights(support, student.multihead.MultiHeadAttention(12, 3), "MultiHeadAttention(12, 3)", 12, 3)


@pytest.mark.covers("rules", "MultiHeadAttention")
@pytest.mark.points(2)
@pytest.mark.contract("banned")
@pytest.mark.covers("split_heads:banned", "combine_heads:banned", "MultiHeadAttention.__init__:banned", "MultiHeadAttention.forward:banned")
def test_no_banned_apis(submission, support, mha):
    """does not use torch.nn.MultiheadAttention or a built-in attention function (MultiHeadAttention builds, loads and runs)"""
    # `mha` (the student's module) must use the weights it loads: this counts only for working code;
    # its forward runs with and without a mask, where a banned API is refused at run time.
    expect_uses_loaded_weights(support, mha, "MultiHeadAttention(12, 3)", 12, 3)
    q, k, v = common.inputs(90)
    mask = common.random_mask((q.shape[0], 1, q.shape[1], k.shape[1]), 90)

    def run() -> None:
        mha(q, k, v)
        mha(q, k, v, mask)

    expect_no_banned_apis(
        submission, "ex3", run,
        rules="torch.nn.MultiheadAttention, F.multi_head_attention_forward and "
              "F.scaled_dot_product_attention are not allowed: write the attention yourself")
