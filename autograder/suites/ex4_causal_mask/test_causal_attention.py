"""ex4 · causal_self_attention: values, dtypes, no future leak, autograd, inputs left alone."""
from __future__ import annotations

import pytest
import torch

import reference.causal as ref
from autograder.diagnosis import ex4 as mistakes
from autograder.diagnosis.causes import General
from autograder.suites import checks, contract_rules
from autograder.suites.ex4_causal_mask import common

NAME = "causal_self_attention"


def _inputs(offset, B, n, d_model, d_k, d_v, dtype=torch.float64):
    x = common.randn(offset, B, n, d_model, dtype=dtype)
    return [x, *common.weights(offset, d_model, d_k, d_v, dtype)]


def _check(student, x, W_q, W_k, W_v):
    dtype = x.dtype
    inputs = checks.describe_inputs(x=x, W_q=W_q, W_k=W_k, W_v=W_v) + \
        f", dtype {str(dtype).removeprefix('torch.')}"
    out, w = checks.expect_tuple(getattr(student.causal, NAME)(x, W_q, W_k, W_v), 2, f"{NAME}(…)")
    common.expect_tensor(out, "output")
    common.expect_tensor(w, "weights")
    want_out, want_w = ref.causal_self_attention(*(t.to(torch.float64) for t in (x, W_q, W_k, W_v)))
    rtol, atol = checks.tolerance(dtype)
    checks.expect_output_and_weights(out, w, want_out, want_w, inputs, rtol=rtol, atol=atol,
                                     dtype=dtype, nan_hint=common.nan_rows_hint(w),
                                     mistakes=lambda which: mistakes.causal(x, W_q, W_k, W_v, which))
    return out, w, inputs


@pytest.mark.points(2)
@pytest.mark.covers("causal_self_attention")
@pytest.mark.contract("causal_self_attention")
@pytest.mark.covers("causal_self_attention:dtype/float64")
def test_causal_attention_values(student):
    """causal_self_attention matches the reference (float64, d_model != d_k != d_v)"""
    _check(student, *_inputs(1, B=2, n=5, d_model=6, d_k=4, d_v=3))


@pytest.mark.points(1)
@pytest.mark.covers("causal_self_attention")
@pytest.mark.contract("causal_self_attention", "conventions/dtype")
@pytest.mark.covers("causal_self_attention:dtype/float32")
def test_causal_attention_float32(student):
    """causal_self_attention keeps float32 and matches the reference"""
    _check(student, *_inputs(2, B=3, n=4, d_model=4, d_k=4, d_v=5, dtype=torch.float32))


@pytest.mark.points(1)
@pytest.mark.covers("causal_self_attention")
@pytest.mark.contract("causal_self_attention")
def test_causal_attention_weights_lower_triangular(student):
    """causal_self_attention weights: exactly 0 above the diagonal, rows sum to 1"""
    x, W_q, W_k, W_v = _inputs(3, B=2, n=6, d_model=4, d_k=4, d_v=4)
    W_q = W_q * 4                                   # peaked scores: large future scores would show
    inputs = checks.describe_inputs(x=x, W_q=W_q, W_k=W_k, W_v=W_v)
    _, w = checks.expect_tuple(getattr(student.causal, NAME)(x, W_q, W_k, W_v), 2, f"{NAME}(…)")
    checks.expect_shape(common.expect_tensor(w, "weights"), (2, 6, 6), "weights", inputs)
    checks.expect_finite(w, "weights", inputs, nan_hint=common.nan_rows_hint(w))
    future = ~ref.create_causal_mask(6)
    bad = int((w[:, future] != 0).sum())
    if bad:
        checks.fail(f"weights: {bad} entries above the diagonal (future positions) are not exactly 0 "
                    f"(inputs: {inputs})")
    dev = float((w.to(torch.float64).sum(-1) - 1).abs().max())
    if dev > 1e-6 or (w < 0).any():
        checks.fail(f"weights: rows must be non-negative and sum to 1 (largest deviation {dev:.3g}; "
                    f"inputs: {inputs})")


@pytest.mark.points(2)
@pytest.mark.parametrize("k", [1, 3], ids=["from position 1", "from position 3"])
@pytest.mark.covers("causal_self_attention")
@pytest.mark.contract("causal_self_attention")
def test_causal_attention_no_future_leak(student, k):
    """causal_self_attention: changing later tokens leaves earlier outputs unchanged"""
    x, W_q, W_k, W_v = _inputs(4, B=2, n=5, d_model=4, d_k=3, d_v=3)
    x2 = x.clone()
    x2[:, k:] = common.randn(40 + k, 2, 5 - k, 4) * 3
    inputs = checks.describe_inputs(x=x, W_q=W_q, W_k=W_k, W_v=W_v) + f", x changed at positions >= {k}"
    out1, w1 = checks.expect_tuple(getattr(student.causal, NAME)(x, W_q, W_k, W_v), 2, f"{NAME}(…)")
    out2, w2 = checks.expect_tuple(getattr(student.causal, NAME)(x2, W_q, W_k, W_v), 2, f"{NAME}(…)")
    checks.expect_shape(common.expect_tensor(out1, "output"), (2, 5, 3), "output", inputs)
    checks.expect_shape(common.expect_tensor(out2, "output"), (2, 5, 3), "output", inputs)
    checks.expect_finite(w1, "weights", inputs, nan_hint=common.nan_rows_hint(w1))
    checks.expect_finite(out1, "output", inputs)
    diff = float((out1[:, :k] - out2[:, :k]).abs().max())
    if not diff <= 1e-10:
        checks.fail(f"output at positions < {k} changed by up to {diff:.3g} when only positions >= {k} "
                    f"of x changed: information leaks from the future ({inputs})",
                    checks.likely_cause(w1, lambda: mistakes.causal(x, W_q, W_k, W_v, "weights")))


@pytest.mark.points(1)
@pytest.mark.covers("causal_self_attention")
@pytest.mark.contract("conventions/differentiable")
@pytest.mark.covers("causal_self_attention:grad")
def test_causal_attention_differentiable(student, support):
    """causal_self_attention is differentiable w.r.t. x and the three matrices"""
    args = _inputs(5, B=2, n=4, d_model=3, d_k=2, d_v=4)
    g_out = common.randn(50, 2, 4, 4)
    inputs = checks.describe_inputs(x=args[0], W_q=args[1], W_k=args[2], W_v=args[3])
    with checks.calling(f"causal.{NAME}"):
        res = support.autograd.grads(getattr(student.causal, NAME), args, {}, [g_out, None], [0, 1, 2, 3])
    if not res["requires_grad"] or not res["requires_grad"][0]:
        checks.fail(f"{NAME}: the output is not connected to the inputs by autograd; do not use "
                    f".detach(), .numpy(), .item() or torch.no_grad() on the computation path ({inputs})",
                    cause=General.DETACHED)
    if res["error"]:
        checks.fail(f"{NAME}: backpropagating through your output failed: {res['error']} ({inputs})")
    want = common.causal_attention_grads(g_out, *args)
    for name, got, exp in zip(("x", "W_q", "W_k", "W_v"), res["grads"], want):
        if got is None:
            checks.fail(f"{NAME}: no gradient reaches {name} ({inputs})")
        checks.expect_close(got, exp, f"gradient w.r.t. {name} of sum(g·output)", inputs=inputs,
                            rtol=1e-6, atol=1e-9)


@pytest.mark.points(0.5)
@pytest.mark.covers("causal_self_attention")
@pytest.mark.contract("causal_self_attention")
@pytest.mark.covers("causal_self_attention:size/one position, B = 1")
def test_causal_attention_single_position(student):
    """causal_self_attention with one position and batch size 1"""
    _check(student, *_inputs(6, B=1, n=1, d_model=3, d_k=2, d_v=2))


@pytest.mark.covers("causal_self_attention:inputs", "causal_self_attention")   # a crash fails it too: "(and runs)"
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
@pytest.mark.covers("causal_self_attention:inputs/tensor")
def test_causal_attention_leaves_inputs_unchanged(student, support):
    """causal_self_attention does not modify x or the matrices (and runs)"""
    args = _inputs(7, B=2, n=3, d_model=3, d_k=3, d_v=2)
    with checks.calling(f"causal.{NAME}"):
        result, changes = contract_rules.call_and_check_unchanged(support, getattr(student.causal, NAME), args)
    common.expect_unchanged(changes, ["x", "W_q", "W_k", "W_v"], NAME)
    checks.expect_all_finite(result, f"{NAME}(…)", checks.describe_inputs(x=args[0]))  # values: the other tests
