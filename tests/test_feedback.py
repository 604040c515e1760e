"""The pieces of the feedback that need no grading: blame bookkeeping, naming a
mistake from an exception, ambiguous diagnoses, causes in check failures."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.diagnosis import diagnose
from autograder.diagnosis.errors import cause_of_error
from autograder.suites import checks
from suite_covers import declared_breaks, justified, mutant_breaks, names_in_title

SOLUTION = '''
def mask(n):
    return n

def attention(x):
    return mask(x) + 1

def generate(x):
    return attention(x) * 2

def unrelated(y):
    return y
'''


def test_a_mutant_breaks_its_function_and_every_caller():
    mutant = SOLUTION.replace("return n\n", "return -n\n")
    assert mutant_breaks(SOLUTION, mutant, "# expect-fail: x\n@@ -1 +1 @@\n") == {"mask", "attention", "generate"}
    patch = "# expect-fail: x\n# breaks: unrelated:inputs, rules\n@@ -1 +1 @@\n"
    assert declared_breaks(patch) == {"unrelated:inputs", "rules"}
    assert "unrelated:inputs" in mutant_breaks(SOLUTION, mutant, patch)


def test_blame_follows_the_function_and_its_parts():
    """A rule test judges a call that works (NaN, junk fail it), so a mutant that breaks a
    function may fail that function's rule tests; never another function's, and a break
    of one property never justifies a value test."""
    breaks = {"softmax"}
    assert justified({"softmax"}, breaks)
    assert justified({"softmax:inputs"}, breaks)
    assert not justified({"scaled_dot_product_attention_np:inputs"}, breaks)
    assert not justified({"softmax"}, {"softmax:inputs"})          # a property break: values still right
    assert justified({"softmax:inputs/shared"}, {"softmax:inputs"})
    assert justified({"MultiHeadAttention.forward:device"}, {"MultiHeadAttention"})


def test_titles_name_whole_contract_names_only():
    assert names_in_title("ex1", "scaled_dot_product_attention_np on unbatched inputs") == {
        "scaled_dot_product_attention_np"}
    assert names_in_title("ex4", "create_padding_mask and combine_masks on a batch") == {
        "create_padding_mask", "combine_masks"}
    assert names_in_title("ex3", "public: combine_heads(split_heads(x, h)) == x") == {
        "combine_heads", "split_heads"}


@pytest.mark.parametrize("type_name, message, where, words", [
    ("RuntimeError", "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
     [], ".detach()"),
    ("RuntimeError", "view size is not compatible with input tensor's size and stride (at least one "
     "dimension spans across two contiguous subspaces). Use .reshape(...) instead.", [], ".reshape"),
    ("RuntimeError", "expected scalar type Double but found Float", [], "dtype"),
    ("TypeError", "~ (operator.invert) is only implemented on integer and Boolean-type tensors", [], "torch.bool"),
    ("TypeError", "create_causal_mask() got an unexpected keyword argument 'device'", [], "'device'"),
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "attention_backward_np", "    dV = P @ d_output   # (m, d_v)"]], "Pᵀ"),
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "attention_backward_np", "    dK = dS @ Q * scale"]], "dSᵀ"),
])
def test_exceptions_with_a_known_cause(type_name, message, where, words):
    assert words in (cause_of_error(type_name, message, where) or "")


@pytest.mark.parametrize("type_name, message, where", [
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "f", "    dV = np.swapaxes(P, -1, -2) @ d_output"]]),   # transposed: not that
    ("ValueError", "matmul: Input operand 1 has a mismatch", [["attention.py", 9, "f", "    out = w @ V"]]),
    ("KeyError", "'W_q.weight'", []),
    ("ZeroDivisionError", "division by zero", []),
])
def test_exceptions_without_a_known_cause_get_none(type_name, message, where):
    assert cause_of_error(type_name, message, where) is None


def test_an_ambiguous_match_names_every_fitting_mistake_never_just_one():
    got = np.zeros((1, 1))
    hint = diagnose(got, {"A": np.zeros((1, 1)), "B": np.ones((1, 1)), "C": np.zeros((1, 1))})
    assert hint == "A\n  or: C"
    assert diagnose(np.full((1, 1), 2.0), {"A": np.zeros((1, 1))}) is None


def test_a_cause_has_a_line_of_its_own():
    with pytest.raises(checks.GradingFailure) as info:
        checks.fail("x: wrong", cause="a known mistake")
    assert str(info.value) == "x: wrong\nLikely cause: a known mistake"
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_dtype(torch.zeros(2, dtype=torch.float32), torch.bool, "mask")
    assert "Likely cause:" in str(info.value) and "torch.bool" in str(info.value)
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_tuple(np.zeros(3), 2, "f(x)")
    assert "Likely cause:" in str(info.value)
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_tuple(None, 2, "f(x)")                  # nothing known: no cause invented
    assert "Likely cause:" not in str(info.value)
