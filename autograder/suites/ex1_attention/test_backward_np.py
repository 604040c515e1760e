"""ex1 · attention_backward_np: hand-derived gradients compared with the reference.

The reference backward is itself checked against torch autograd in the kit's own tests.
"""
from __future__ import annotations

import pytest

import reference.attention as ref
from autograder.diagnosis import ex1 as mistakes
from autograder.suites import checks, contract_rules
from autograder.suites.ex1_attention import common

NAME = "attention_backward_np"


def _check(student, dO, Q, K, V, mask=None):
    named = {"d_output": dO, "Q": Q, "K": K, "V": V, **({} if mask is None else {"mask": mask})}
    inputs = checks.describe_inputs(**named)
    args = (dO, Q, K, V) if mask is None else (dO, Q, K, V, mask)
    got = checks.expect_tuple(getattr(student.attention, NAME)(*args), 3, f"{NAME}(…)")
    want = ref.attention_backward_np(*args)
    for i, (name, g, w) in enumerate(zip(("dQ", "dK", "dV"), got, want)):
        checks.expect_shape(g, w.shape, name, inputs)
    # dV first: it needs only the forward weights, so its failure is the easiest to read
    for i in (2, 0, 1):
        name = ("dQ", "dK", "dV")[i]
        checks.expect_close(got[i], want[i], name, inputs=inputs, rtol=1e-6, atol=1e-9,
                            mistakes=lambda i=i: mistakes.backward(dO, Q, K, V, mask, which=i))


@pytest.mark.points(1.5)
@pytest.mark.covers("attention_backward_np")
@pytest.mark.contract("attention_backward_np/gradients", "attention_backward_np/signature", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers("attention_backward_np:lead/0")
def test_backward_unbatched(student):
    """attention_backward_np on unbatched inputs (n != m, d_k != d_v) matches the reference"""
    Q, K, V = common.qkv(20, (), n=3, m=5, d_k=4, d_v=2)
    dO = common.rng(21).normal(size=(3, 2))
    _check(student, dO, Q, K, V)


@pytest.mark.points(1.5)
@pytest.mark.covers("attention_backward_np")
@pytest.mark.contract("attention_backward_np/gradients", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers("attention_backward_np:lead/several")
def test_backward_batched(student):
    """attention_backward_np on inputs with two leading dims matches the reference"""
    Q, K, V = common.qkv(22, (2, 2), n=4, m=3, d_k=2, d_v=5)
    dO = common.rng(23).normal(size=(2, 2, 4, 5))
    _check(student, dO, Q, K, V)


@pytest.mark.points(1.5)
@pytest.mark.covers("attention_backward_np")
@pytest.mark.contract("attention_backward_np/gradients", "attention_backward_np/signature", "conventions/masks", "conventions/mask-shapes")
@pytest.mark.covers("attention_backward_np:mask/(n, m)", "attention_backward_np:lead/1")
def test_backward_masked(student):
    """attention_backward_np with a broadcast (n, m) mask matches the reference"""
    Q, K, V = common.qkv(24, (2,), n=4, m=6, d_k=3, d_v=3)
    dO = common.rng(25).normal(size=(2, 4, 3))
    mask = common.mask(24, (4, 6))
    _check(student, dO, Q, K, V, mask)


@pytest.mark.covers("attention_backward_np:inputs", "attention_backward_np")   # a crash fails it too: "(and runs)"
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
@pytest.mark.covers("attention_backward_np:inputs/ndarray")
def test_backward_leaves_inputs_unchanged(student, support):
    """attention_backward_np does not modify its inputs (and runs)"""
    Q, K, V = common.qkv(26, (2,), n=3, m=4, d_k=2, d_v=3)
    dO = common.rng(27).normal(size=(2, 3, 3))
    mask = common.mask(26, (3, 4))
    with checks.calling(f"attention.{NAME}"):
        result, changes = contract_rules.call_and_check_unchanged(
            support, getattr(student.attention, NAME), [dO, Q, K, V, mask])
    common.expect_unchanged(changes, ["d_output", "Q", "K", "V", "mask"], NAME)
    checks.expect_all_finite(result, f"{NAME}(…)", checks.describe_inputs(d_output=dO, Q=Q, K=K, V=V, mask=mask))   # values: the other tests
