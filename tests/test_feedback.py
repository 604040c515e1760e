"""The pieces of the feedback that need no grading: blame bookkeeping, naming a
mistake from an exception, ambiguous diagnoses, causes in check failures."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.diagnosis import causes, diagnose
from autograder.contract import EXERCISES
from autograder.diagnosis.causes import General, Several
from autograder.suites.ex1_attention.causes import Ex1Cause
from autograder.suites.ex2_visualization.causes import Ex2Cause
from autograder.diagnosis.errors import cause_of_error, device_cause, frames_of
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


@pytest.mark.parametrize("type_name, message, where, cause", [
    ("RuntimeError", "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
     [], General.NUMPY_OF_GRAD_TENSOR),
    ("RuntimeError", "view size is not compatible with input tensor's size and stride (at least one "
     "dimension spans across two contiguous subspaces). Use .reshape(...) instead.", [], General.VIEW_AFTER_TRANSPOSE),
    ("RuntimeError", "expected scalar type Double but found Float", [], General.DTYPE_MIX),
    ("RuntimeError", "expected m1 and m2 to have the same dtype, but got: float != double", [], General.DTYPE_MIX),
    ("TypeError", "~ (operator.invert) is only implemented on integer and Boolean-type tensors", [],
     General.MASK_NOT_BOOL),
    ("TypeError", "create_causal_mask() got an unexpected keyword argument 'device'", [],
     General.SIGNATURE_MISSING_PARAMETER),
    ("BannedAPIError", "torch.nn.functional.scaled_dot_product_attention is not allowed in this exercise", [],
     General.BANNED_API),
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "attention_backward_np", "    dV = P @ d_output   # (m, d_v)"]], Ex1Cause.BACK_DV_NOT_T),
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "_single_backward", "    dv = w @ g"]], Ex1Cause.BACK_DV_NOT_T),
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "attention_backward_np", "    dK = dS @ Q * scale"]], Ex1Cause.BACK_DK_NOT_T),
    # the operation on the line that raised: a product with .T
    ("RuntimeError", "Expected size for first two dimensions of batch2 tensor to be: [8, 4] but got: [4, 5].",
     [["causal.py", 40, "causal_self_attention", "    scores = Q @ K.T / math.sqrt(d_k)"]], General.BATCHED_DOT_T),
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
     "(n?,k),(k,m?)->(n?,m?) (size 5 is different from 4)",
     [["attention.py", 30, "f", "    s = np.matmul(Q, K.T)"]], General.BATCHED_DOT_T),
    ("IndexError", "The shape of the mask [3, 5] at index 0 does not match the shape of the indexed tensor "
     "[2, 3, 5] at index 0", [["multihead.py", 60, "forward", "        scores[~mask] = float('-inf')"]],
     General.MASK_INDEXING),
])
def test_exceptions_with_a_known_cause(type_name, message, where, cause):
    assert cause_of_error(type_name, message, where) == cause


MASK_UNSQUEEZED = """
def combine_heads(x):
    B, h, n, d = x.shape
    return x

def forward(self, query, key, value, mask=None):
    if mask is not None:
        mask = mask.unsqueeze(1)
    heads = attend(q, k, v, mask)
    return combine_heads(heads)
"""


def test_a_cause_read_from_the_function_that_made_the_mistake():
    """The line that raised is not always the one that erred: a mask given an extra axis in
    forward makes combine_heads fail to unpack; the function's body says why."""
    where = [["multihead.py", 10, "forward", "    return combine_heads(heads)"],
             ["multihead.py", 3, "combine_heads", "    B, h, n, d = x.shape"]]
    message = "too many values to unpack (expected 4)"
    assert cause_of_error("ValueError", message, where, {"multihead.py": MASK_UNSQUEEZED}) == General.MASK_EXTRA_AXIS
    assert cause_of_error("ValueError", message, where) is None                      # the lines alone: nothing
    plain = MASK_UNSQUEEZED.replace("mask = mask.unsqueeze(1)", "pass")
    assert cause_of_error("ValueError", message, where, {"multihead.py": plain}) is None
    # the statement that raised, written over several lines, is read whole
    spread = MASK_UNSQUEEZED.replace("    heads = attend(q, k, v, mask)\n", "    heads = attend(q, k, v,\n"
                                     "                   None if mask is None else mask[:, None])\n")
    spread = spread.replace("mask = mask.unsqueeze(1)", "pass")
    where = [["multihead.py", 9, "forward", "    heads = attend(q, k, v,"],
             ["multihead.py", 3, "attend", "    s = s.masked_fill(~mask, 0.0)"]]
    message = "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"
    assert cause_of_error("RuntimeError", message, where, {"multihead.py": spread}) == General.MASK_EXTRA_AXIS


BUFFER = """
def split_heads(x, h):
    B, n, d = x.shape
    out = torch.zeros(B, h, n, d // h)
    for i in range(h):
        out[:, i] = x[..., i * (d // h):(i + 1) * (d // h)]
    return out
"""


def test_a_buffer_made_on_the_default_device_is_not_a_value_read_out():
    """The wrong hint of the hint issue: a split_heads filling a torch.zeros(...) buffer made on the
    CPU failed on the meta device and was told a value is read out (.item(), .numpy())."""
    where = [["multihead.py", 6, "split_heads", "        out[:, i] = x[..., i * (d // h):(i + 1) * (d // h)]"]]
    frames = frames_of(where, {"multihead.py": BUFFER})
    assert device_cause("Cannot copy out of meta tensor; no data!", frames) == General.TENSOR_ON_DEFAULT_DEVICE
    read = [["multihead.py", 3, "f", "    n = int(lengths.max().item())"]]
    assert device_cause("Cannot copy out of meta tensor; no data!", frames_of(read)) == General.VALUE_READ_OUT
    # nothing in the code says which: both, never one picked
    assert device_cause("Cannot copy out of meta tensor; no data!", []) == \
        Several((General.TENSOR_ON_DEFAULT_DEVICE, General.VALUE_READ_OUT))
    # PyTorch says which: two devices met (a Python float("-inf") on the line is no value read)
    fill = frames_of([["causal.py", 9, "f", '    scores = scores.masked_fill(~mask, float("-inf"))']])
    assert device_cause("Tensor on device meta is not on the expected device cpu!", fill) == \
        General.TENSOR_ON_DEFAULT_DEVICE
    assert device_cause("Could not run 'aten::_local_scalar_dense' with arguments from the 'Meta' backend",
                        fill) == General.VALUE_READ_OUT


@pytest.mark.parametrize("type_name, message, where", [
    ("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0",
     [["attention.py", 9, "f", "    dV = np.swapaxes(P, -1, -2) @ d_output"]]),   # transposed: not that
    ("ValueError", "matmul: Input operand 1 has a mismatch", [["attention.py", 9, "f", "    out = w @ V"]]),
    ("RuntimeError", "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
     [["causal.py", 9, "f", "    out = w.T + V"]]),                              # .T, but no product
    ("KeyError", "'W_q.weight'", []),
    ("ZeroDivisionError", "division by zero", []),
])
def test_exceptions_without_a_known_cause_get_none(type_name, message, where):
    assert cause_of_error(type_name, message, where) is None


def test_an_ambiguous_match_names_every_fitting_mistake_never_just_one():
    got = np.zeros((1, 1))
    A, B, C = Ex1Cause.NO_SCALE, Ex1Cause.WRONG_AXIS, Ex1Cause.MASK_ZERO
    hint = diagnose(got, {A: np.zeros((1, 1)), B: np.ones((1, 1)), C: np.zeros((1, 1))})
    assert hint == Several((A, C))
    assert causes.text(hint) == A.sentence + "\n  or: " + C.sentence
    assert causes.ids(hint) == ["ex1.no_scale", "ex1.mask_zero"]
    assert diagnose(np.full((1, 1), 2.0), {A: np.zeros((1, 1))}) is None


def _generate_until(model, prompt, k, eos=None):
    """Greedy decoding that appends ``k`` tokens, or stops once every row's next token is ``eos``."""
    ids = prompt.clone()
    with torch.no_grad():
        for _ in range(k):
            next_id = model(ids)[:, -1, :].argmax(dim=-1, keepdim=True)        # (B, 1)
            if eos is not None and bool((next_id == eos).all()):
                break
            ids = torch.cat([ids, next_id], dim=1)
    return ids


@pytest.mark.parametrize("rows", [1, 3])
def test_generation_cut_one_token_short_names_the_short_loop_and_an_eos_check_alike(rows):
    """A continuation one token short is what ``range(k - 1)`` gives, and also what an
    end-of-sequence check gives when every row's last token is the one it stops on: the hint
    names both then (a CI secret once gave the EOS mutant the short-loop hint alone), and
    the short loop alone when the rows' last tokens differ, so no EOS check could stop there."""
    from autograder.diagnosis import ex4 as mistakes
    from autograder.suites.ex4_causal_mask.causes import Ex4Cause
    from autograder.support import lm

    found = set()
    for seed in range(40):
        model = lm.build(vocab_size=7, seed=seed)
        prompt = torch.randint(0, 7, (rows, 2), generator=torch.Generator().manual_seed(seed))
        full = _generate_until(model, prompt, 6)                                   # (rows, 8)
        for k in range(1, 7):
            last = full[:, 1 + k]                                                  # the k-th new token
            short = _generate_until(model, prompt, k - 1)
            named = causes.members(mistakes.name_generation_mistake(short, mistakes.greedy(model, prompt, k)))
            assert Ex4Cause.GEN_TOO_FEW_TOKENS in named
            shared = bool((last == last[0]).all())
            assert (Ex4Cause.GEN_STOPPED_EARLY in named) == shared, (seed, k, full)
            if shared and int(last[0]) not in full[:, 2:1 + k]:                     # its first appearance
                stopped = _generate_until(model, prompt, k, eos=int(last[0]))
                assert torch.equal(stopped, short)
            found.add(shared)
    assert found == ({True} if rows == 1 else {True, False})


def test_causes_have_unique_ids_and_sentences():
    every = causes.every()
    assert len({c.id for c in every}) == len(every) > 100
    assert len({c.sentence for c in every}) == len(every)
    assert set(General) <= set(every) and set(Ex1Cause) <= set(every) and set(Ex2Cause) <= set(every)
    areas = {"general"} | {ex.id for ex in EXERCISES}
    for c in every:
        assert c.id.split(".")[0] in areas, c.id
        # an exercise's causes live in its folder and carry its id
        assert c.id.startswith("general.") == (type(c) is General), c.id
        assert causes.of_id(c.id) is c and c.sentence.strip() and "Likely cause" not in c.sentence
    with pytest.raises(KeyError):
        causes.of_id("ex1.no_such_mistake")
    with pytest.raises(ValueError):
        Several((A := Ex1Cause.NO_SCALE, A))


def test_a_cause_has_a_line_of_its_own():
    with pytest.raises(checks.GradingFailure) as info:
        checks.fail("x: wrong", cause=Ex1Cause.NO_SCALE)
    assert str(info.value) == "x: wrong\nLikely cause: " + Ex1Cause.NO_SCALE.sentence
    assert info.value.cause is Ex1Cause.NO_SCALE
    with pytest.raises(TypeError):
        checks.fail("x: wrong", cause="free text is not a cause")      # a hint has an identity
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_dtype(torch.zeros(2, dtype=torch.float32), torch.bool, "mask")
    assert info.value.cause is General.MASK_NOT_BOOL and "torch.bool" in str(info.value)
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_tuple(np.zeros(3), 2, "f(x)")
    assert info.value.cause is General.RETURNS_ONE_VALUE
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_tuple(None, 2, "f(x)")                  # nothing known: no cause invented
    assert "Likely cause:" not in str(info.value) and info.value.cause is None


def test_a_result_off_by_a_constant_factor_says_so():
    """A result that is the expected one times a factor (a scaling missing, a sum for a mean)
    says the factor, when no known mistake of the exercise matches."""
    want = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_close(want * 2.8284, want, "dQ")
    assert info.value.cause is General.CONSTANT_FACTOR and "2.828 times the expected ones" in str(info.value)
    with pytest.raises(checks.GradingFailure) as info:                 # a known mistake comes first
        checks.expect_close(want * 2.8284, want, "dQ", mistakes={Ex1Cause.BACK_NO_SCALE: want * 2.8284})
    assert info.value.cause is Ex1Cause.BACK_NO_SCALE
    for got in (want + 1.0, -want, want * np.array([1.0, 2.0, 1.0])):  # not one positive factor
        with pytest.raises(checks.GradingFailure) as info:
            checks.expect_close(got, want, "dQ")
        assert info.value.cause is None, got
    with pytest.raises(checks.GradingFailure) as info:                 # too few numbers to tell
        checks.expect_close(np.array([2.0]), np.array([1.0]), "loss")
    assert info.value.cause is None


def test_the_terminal_summary_shows_the_likely_cause_in_full():
    """grade's terminal summary shortens a failure's message (results.json has it all) but never
    its likely cause: the student reads that line in full, however long."""
    from autograder.cli import failure_line
    from autograder.results import TestResult

    long = Ex2Cause.TIES_QUICKSORT                     # more than 250 characters
    assert len(long.sentence) > 250
    test = TestResult("ex2", "top_attended ties", 1.0, output="rows differ " + "x" * 400
                      + "\nLikely cause: " + long.sentence, cause=(long.id, Ex2Cause.TOP_TIES_HIGH.id))
    line = failure_line(test)
    assert line.splitlines()[0].startswith("  ✗ ex2 · top_attended ties: rows differ") and len(line.splitlines()[0]) < 250
    assert "      Likely cause: " + long.sentence + "\n        or: " + Ex2Cause.TOP_TIES_HIGH.sentence in line
    assert "Likely cause" not in failure_line(TestResult("ex2", "t", 1.0, output="wrong"))


def test_the_terminal_summary_does_not_stop_at_a_colon():
    """A message whose first line only announces the detail ("… does not allow (…):") shows
    that detail's first line too in grade's summary (a blind student, s25, saw nothing after
    the colon there)."""
    from autograder.cli import failure_line
    from autograder.results import TestResult

    banned = TestResult("ex1", "written by hand", 1.0, output=(
        "attention.py uses APIs this exercise does not allow (write attention yourself):\n"
        "  line 40: torch.exp inside softmax (NumPy only)\n  line 52: torch.log inside softmax (NumPy only)"))
    first = failure_line(banned).splitlines()[0]
    assert first.endswith("does not allow (write attention yourself): line 40: torch.exp inside softmax (NumPy only)")
    plain = TestResult("ex1", "t", 1.0, output="wrong shape:\nLikely cause: a transpose")
    assert failure_line(plain).splitlines()[0].endswith(": wrong shape:")


def test_a_result_that_lost_its_size_one_axes_to_squeeze(monkeypatch):
    """(1, d_v) expected, (d_v,) returned: squeeze() without a dim in the student's file says
    why; without one in the code, nothing is said (it could be an index)."""
    monkeypatch.setattr(checks, "student_sources", {"causal.py": "def f(w, V):\n    return (w @ V).squeeze()\n"})
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_shape(np.zeros(3), (1, 3), "output")
    assert info.value.cause is General.SQUEEZE_ALL
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_close(np.zeros((4,)), np.zeros((1, 4, 1)), "logits")
    assert info.value.cause is General.SQUEEZE_ALL
    with pytest.raises(checks.GradingFailure) as info:          # another shape: not that
        checks.expect_shape(np.zeros((3, 1)), (1, 3), "output")
    assert info.value.cause is None
    monkeypatch.setattr(checks, "student_sources", {"causal.py": "def f(w, V):\n    return (w @ V)[0]\n"})
    with pytest.raises(checks.GradingFailure) as info:
        checks.expect_shape(np.zeros(3), (1, 3), "output")
    assert info.value.cause is None
