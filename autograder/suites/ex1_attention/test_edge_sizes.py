"""ex1 · the shape rules at their smallest sizes: one query (n = 1), one key (m = 1).

Students' crashes live there (a ``squeeze()`` that drops a size-1 axis, a sum over the wrong
axis that goes unnoticed while it has more than one entry)."""
from __future__ import annotations

import pytest

from autograder.suites.ex1_attention import common
from autograder.suites.ex1_attention.test_backward_np import _check as check_backward
from autograder.suites.ex1_attention.test_forward_np import _check as check_np
from autograder.suites.ex1_attention.test_torch import _check as check_torch

NP, BACK, TORCH = "scaled_dot_product_attention_np", "attention_backward_np", "scaled_dot_product_attention"


@pytest.mark.points(0.5)
@pytest.mark.contract("scaled_dot_product_attention_np/shapes", "attention")
@pytest.mark.covers(NP, f"{NP}:size/one query", f"{NP}:size/one key")
def test_np_one_query_and_one_key(student):
    """NumPy attention with one query (n = 1, masked) and with one key (m = 1)"""
    Q, K, V = common.qkv(70, (2,), n=1, m=4, d_k=3, d_v=2)
    check_np(student, Q, K, V, common.mask(70, (1, 4)))
    Q, K, V = common.qkv(71, (2,), n=3, m=1, d_k=3, d_v=2)
    check_np(student, Q, K, V)


@pytest.mark.points(0.5)
@pytest.mark.contract("attention_backward_np/gradients", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers(BACK, f"{BACK}:size/one query", f"{BACK}:size/one key")
def test_backward_one_query_and_one_key(student):
    """attention_backward_np with one query (n = 1, masked) and with one key (m = 1)"""
    Q, K, V = common.qkv(72, (2,), n=1, m=4, d_k=3, d_v=2)
    check_backward(student, common.rng(73).normal(size=(2, 1, 2)), Q, K, V, common.mask(72, (1, 4)))
    Q, K, V = common.qkv(74, (2,), n=3, m=1, d_k=3, d_v=2)
    check_backward(student, common.rng(75).normal(size=(2, 3, 2)), Q, K, V)


@pytest.mark.points(0.5)
@pytest.mark.contract("scaled_dot_product_attention/torch", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers(TORCH, f"{TORCH}:size/one query", f"{TORCH}:size/one key")
def test_torch_one_query_and_one_key(student):
    """torch attention with one query (n = 1, masked) and with one key (m = 1)"""
    Q, K, V = common.to_torch(*common.qkv(76, (2,), n=1, m=4, d_k=3, d_v=2))
    mask = common.to_torch(common.mask(76, (1, 4)))[0]
    check_torch(student, Q, K, V, mask)
    Q, K, V = common.to_torch(*common.qkv(77, (2,), n=3, m=1, d_k=3, d_v=2))
    check_torch(student, Q, K, V)
