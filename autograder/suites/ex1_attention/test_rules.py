"""ex1 · the exercise's rules: no banned APIs, NumPy-only functions stay NumPy-only."""
from __future__ import annotations

import numpy as np
import pytest

from autograder.sandbox import StudentError
from autograder.suites import checks
from autograder.suites.ex1_attention import common


@pytest.mark.covers("rules", "scaled_dot_product_attention")
@pytest.mark.points(1)
@pytest.mark.contract("banned", "numpy-only")
@pytest.mark.covers("softmax:banned", "scaled_dot_product_attention_np:banned", "attention_backward_np:banned", "numerical_gradient:banned", "scaled_dot_product_attention:banned")
def test_no_banned_apis(student, submission):
    """attention is written by hand: no banned APIs, no torch in the NumPy functions (and scaled_dot_product_attention runs)"""
    Q, K, V = common.to_torch(*common.qkv(90, (), n=2, m=3, d_k=2, d_v=2))
    checks.expect_all_finite(student.attention.scaled_dot_product_attention(Q, K, V),
                             "scaled_dot_product_attention(Q, K, V)", checks.describe_inputs(Q=Q, K=K, V=V))
    mask = common.to_torch(common.mask(90, (2, 3)))[0]

    def run() -> None:                   # with and without a mask: both branches
        student.attention.scaled_dot_product_attention(Q, K, V)
        student.attention.scaled_dot_product_attention(Q, K, V, mask)
        # the NumPy functions: only torch used inside them counts here (their own bugs cost
        # their own tests; the worker refuses torch while one runs: sandbox/numpy_only.py)
        q, k, v = common.qkv(91, (), n=2, m=3, d_k=2, d_v=2)
        for call in (lambda: student.attention.softmax(q),
                     lambda: student.attention.scaled_dot_product_attention_np(q, k, v),
                     lambda: student.attention.attention_backward_np(np.ones((2, 2)), q, k, v)):
            try:
                call()
            except StudentError as exc:
                if exc.raised == "BannedAPIError":
                    raise

    checks.expect_no_banned_apis(
        submission, "ex1", run,
        rules="write attention yourself; the NumPy functions may not use torch or scipy")
