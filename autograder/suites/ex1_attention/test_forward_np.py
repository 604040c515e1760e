"""ex1 · scaled_dot_product_attention_np: shapes, values, masks, leading dims, inputs left alone."""
from __future__ import annotations

import numpy as np
import pytest

import reference.attention as ref
from autograder.diagnosis import ex1 as mistakes
from autograder.suites import checks, contract_rules
from autograder.suites.ex1_attention import common

pytestmark = pytest.mark.covers("scaled_dot_product_attention_np")

RTOL, ATOL = 1e-7, 1e-9          # float64 results compared with the float64 reference
NAME = "scaled_dot_product_attention_np"


def _check(student, Q, K, V, mask=None, *, rtol=RTOL, atol=ATOL):
    inputs = checks.describe_inputs(Q=Q, K=K, V=V, **({} if mask is None else {"mask": mask}))
    args = (Q, K, V) if mask is None else (Q, K, V, mask)
    out, w = checks.expect_tuple(getattr(student.attention, NAME)(*args), 2, f"{NAME}(…)")
    want_out, want_w = ref.scaled_dot_product_attention_np(*args)
    checks.expect_output_and_weights(out, w, want_out, want_w, inputs, rtol=rtol, atol=atol,
                                     mistakes=lambda which: mistakes.forward(Q, K, V, mask, which))
    return out, w, inputs


@pytest.mark.points(1)
@pytest.mark.contract("attention", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers("scaled_dot_product_attention_np:lead/0")
def test_np_unbatched_values(student):
    """NumPy attention on unbatched inputs (n != m, d_k != d_v) matches the reference"""
    Q, K, V = common.qkv(10, (), n=3, m=5, d_k=4, d_v=6)
    _check(student, Q, K, V)


@pytest.mark.points(1.5)
@pytest.mark.contract("attention", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers("scaled_dot_product_attention_np:lead/1")
def test_np_batched_values(student):
    """NumPy attention on batched inputs matches the reference"""
    Q, K, V = common.qkv(11, (2,), n=4, m=6, d_k=5, d_v=3)
    _check(student, Q, K, V)


@pytest.mark.points(1)
@pytest.mark.contract("attention", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers("scaled_dot_product_attention_np:lead/several")
def test_np_extra_leading_dims(student):
    """NumPy attention with two leading dims (batch, heads) matches the reference"""
    Q, K, V = common.qkv(12, (2, 3), n=5, m=4, d_k=3, d_v=2)
    _check(student, Q, K, V)


@pytest.mark.points(1)
@pytest.mark.contract("attention", "scaled_dot_product_attention_np/shapes")
def test_np_weights_are_distributions(student):
    """NumPy attention weights are non-negative and each row sums to 1"""
    Q, K, V = common.qkv(13, (3,), n=4, m=7, d_k=8, d_v=2)
    Q = Q * 3
    inputs = checks.describe_inputs(Q=Q, K=K, V=V)
    out, w = checks.expect_tuple(student.attention.scaled_dot_product_attention_np(Q, K, V), 2,
                                 f"{NAME}(…)")
    checks.expect_shape(w, (3, 4, 7), "weights", inputs)
    common.expect_rows_sum_to_one(w, "weights", inputs)


@pytest.mark.points(1.5)
@pytest.mark.contract("attention/signature", "conventions/masks", "conventions/mask-shapes")
@pytest.mark.covers("scaled_dot_product_attention_np:mask/(n, m)")
def test_np_mask_broadcast_over_batch(student):
    """NumPy attention with an (n, m) mask on batched inputs: masked weights exactly 0"""
    Q, K, V = common.qkv(14, (2,), n=4, m=5, d_k=3, d_v=4)
    mask = common.mask(14, (4, 5))
    _, w, inputs = _check(student, Q, K, V, mask)
    common.expect_masked_zero(w, mask, "weights", inputs)


@pytest.mark.points(1)
@pytest.mark.contract("attention/signature", "conventions/masks", "conventions/mask-shapes")
@pytest.mark.covers("scaled_dot_product_attention_np:mask/(B, 1, m)", "scaled_dot_product_attention_np:mask/(B, n, m)")
def test_np_mask_per_batch_keys(student):
    """NumPy attention with a (B, 1, m) key mask and a full (B, n, m) mask"""
    Q, K, V = common.qkv(15, (3,), n=4, m=6, d_k=5, d_v=3)
    key_mask = common.mask(15, (3, 1, 6))
    _, w, inputs = _check(student, Q, K, V, key_mask)
    common.expect_masked_zero(w, key_mask, "weights", inputs)
    full = common.mask(16, (3, 4, 6))
    _, w, inputs = _check(student, Q, K, V, full)
    common.expect_masked_zero(w, full, "weights", inputs)


@pytest.mark.points(0.5)
@pytest.mark.contract("attention", "conventions/numpy-float64")
def test_np_float32_inputs(student):
    """NumPy attention accepts float32 inputs"""
    Q, K, V = common.qkv(17, (2,), n=3, m=4, d_k=4, d_v=5, dtype=np.float32)
    _check(student, Q, K, V, rtol=1e-4, atol=1e-5)


@pytest.mark.covers("scaled_dot_product_attention_np:inputs", "scaled_dot_product_attention_np")   # a crash fails it too: "(and runs)"
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
@pytest.mark.covers("scaled_dot_product_attention_np:inputs/ndarray")
def test_np_leaves_inputs_unchanged(student, support):
    """NumPy attention does not modify Q, K, V or the mask (and runs)"""
    Q, K, V = common.qkv(18, (2,), n=3, m=4, d_k=2, d_v=3)
    mask = common.mask(18, (3, 4))
    with checks.calling(f"attention.{NAME}"):
        result, changes = contract_rules.call_and_check_unchanged(
            support, student.attention.scaled_dot_product_attention_np, [Q, K, V, mask])
    common.expect_unchanged(changes, ["Q", "K", "V", "mask"], NAME)
    checks.expect_all_finite(result, f"{NAME}(…)", checks.describe_inputs(Q=Q, K=K, V=V, mask=mask))     # values: the other tests
