"""ex4 · attend_next: one decoding step with a key/value cache."""
from __future__ import annotations

import pytest
import torch

import reference.causal as ref
from autograder.diagnosis import ex4 as mistakes
from autograder.diagnosis.causes import General
from autograder.suites import checks, contract_rules
from autograder.suites.ex4_causal_mask import common

NAME = "attend_next"


def _check(student, q, K, V, want_out=None, want_w=None, what=""):
    dtype = q.dtype
    inputs = checks.describe_inputs(q_t=q, K_cache=K, V_cache=V) + f", dtype {str(dtype).removeprefix('torch.')}" + what
    out, w = checks.expect_tuple(getattr(student.causal, NAME)(q, K, V), 2, f"{NAME}(…)")
    common.expect_tensor(out, "output")
    common.expect_tensor(w, "weights")
    if want_out is None:
        want_out, want_w = ref.attend_next(*(t.to(torch.float64) for t in (q, K, V)))
    if tuple(w.shape) == (K.shape[0], K.shape[1] - 1):
        checks.fail(f"weights: expected shape {tuple(want_w.shape)}, got {tuple(w.shape)} (inputs: {inputs})",
                    mistakes.NEXT_SKIPS_NEWEST)
    checks.expect_shape(w, tuple(want_w.shape), "weights", inputs)
    checks.expect_shape(out, tuple(want_out.shape), "output", inputs)
    checks.expect_dtype(w, dtype, "weights")
    checks.expect_dtype(out, dtype, "output")
    rtol, atol = checks.tolerance(dtype)
    checks.expect_close(w, want_w, "weights", inputs=inputs, rtol=rtol, atol=atol,
                        mistakes=lambda: mistakes.attend_next(q, K, V, "weights"))
    checks.expect_close(out, want_out, "output", inputs=inputs, rtol=rtol, atol=atol,
                        mistakes=lambda: mistakes.attend_next(q, K, V, "output"))


@pytest.mark.points(2)
@pytest.mark.covers("attend_next")
@pytest.mark.contract("attend_next")
@pytest.mark.covers("attend_next:dtype/float64")
def test_attend_next_values(student):
    """attend_next matches the reference (B > 1, d_k != d_v)"""
    q, K, V = common.randn(10, 3, 4), common.randn(11, 3, 5, 4), common.randn(12, 3, 5, 2)
    _check(student, q * 2, K, V)


@pytest.mark.points(2)
@pytest.mark.covers("attend_next")
@pytest.mark.contract("attend_next/rows")
def test_attend_next_matches_causal_rows(student):
    """attend_next on the first t keys equals row t−1 of causal self-attention (t = 1 … n)"""
    B, n, d_model, d_k, d_v = 2, 5, 4, 3, 3
    x = common.randn(13, B, n, d_model)
    W_q, W_k, W_v = common.weights(13, d_model, d_k, d_v)
    full_out, full_w = ref.causal_self_attention(x, W_q, W_k, W_v)
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    for t in range(1, n + 1):
        _check(student, Q[:, t - 1], K[:, :t], V[:, :t], full_out[:, t - 1], full_w[:, t - 1, :t],
               what=f", cache of the first t={t} positions (compared with row {t - 1} of causal attention)")


@pytest.mark.points(1)
@pytest.mark.covers("attend_next")
@pytest.mark.contract("attend_next", "conventions/dtype")
@pytest.mark.covers("attend_next:dtype/float32", "attend_next:size/a cache of one position")
def test_attend_next_float32_and_single_entry_cache(student):
    """attend_next keeps float32, and works with a cache of one position"""
    q, K, V = (common.randn(14, 2, 3, dtype=torch.float32), common.randn(15, 2, 4, 3, dtype=torch.float32),
               common.randn(16, 2, 4, 5, dtype=torch.float32))
    _check(student, q, K, V)
    _check(student, q, K[:, :1], V[:, :1])


@pytest.mark.points(1)
@pytest.mark.covers("attend_next")
@pytest.mark.contract("conventions/differentiable", "conventions/inputs")
@pytest.mark.covers("attend_next:inputs/tensor", "attend_next:grad")
def test_attend_next_differentiable_and_inputs_kept(student, support):
    """attend_next is differentiable and leaves the cache unchanged"""
    q, K, V = common.randn(17, 2, 3), common.randn(18, 2, 4, 3), common.randn(19, 2, 4, 2)
    inputs = checks.describe_inputs(q_t=q, K_cache=K, V_cache=V)
    with checks.calling(f"causal.{NAME}"):
        result, changes = contract_rules.call_and_check_unchanged(support, getattr(student.causal, NAME), [q, K, V])
    common.expect_unchanged(changes, ["q_t", "K_cache", "V_cache"], NAME)
    checks.expect_all_finite(result, f"{NAME}(…)", inputs)    # values: the other tests
    g = common.randn(20, 2, 2)
    with checks.calling(f"causal.{NAME}"):
        res = support.autograd.grads(getattr(student.causal, NAME), [q, K, V], {}, [g, None], [0, 1, 2])
    if not res["requires_grad"] or not res["requires_grad"][0]:
        checks.fail(f"{NAME}: the output is not connected to the inputs by autograd; do not use "
                    f".detach(), .numpy(), .item() or torch.no_grad() on the computation path ({inputs})",
                    cause=General.DETACHED)
    if res["error"]:
        checks.fail(f"{NAME}: backpropagating through your output failed: {res['error']} ({inputs})")
    want = common.attend_next_grads(g, q, K, V)
    for name, got, exp in zip(("q_t", "K_cache", "V_cache"), res["grads"], want):
        if got is None:
            checks.fail(f"{NAME}: no gradient reaches {name} ({inputs})")
        checks.expect_close(got, exp, f"gradient w.r.t. {name} of sum(g·output)", inputs=inputs,
                            rtol=1e-6, atol=1e-9)
