"""ex4 · greedy_generate: the docstring's rules beyond the tokens themselves.

The prompt's dtype is kept (an int32 prompt gives an int32 result), ``max_new_tokens = 0``
returns a copy (not the prompt itself), and the model is run inside ``torch.no_grad()``.
"""
from __future__ import annotations

import pytest
import torch

from autograder.suites.ex4_causal_mask.causes import Ex4Cause
from autograder.sandbox import fetch
from autograder.suites import checks
from autograder.suites.ex4_causal_mask import common
from autograder.suites.ex4_causal_mask.test_generate import NAME, VOCAB, _models

pytestmark = pytest.mark.covers(NAME)


def _prompt(offset: int, B: int, t: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randint(0, VOCAB, (B, t), generator=common.gen(900 + offset)).to(dtype)


@pytest.mark.note("The contract's prompt is a LongTensor and the result a LongTensor: an int32 "
                  "prompt is outside it, and a result in int64 is correct by it. The contract "
                  "could say \"the result has the prompt's dtype\" to make this a rule.")
def test_generate_keeps_an_int32_prompts_dtype(student, support):
    """greedy_generate keeps the prompt's dtype (an int32 prompt)"""
    prompt = _prompt(1, 2, 3, torch.int32)
    remote, _ = _models(support, 901)
    what = f"{NAME}(model, int32 prompt, 3)"
    got = common.expect_tensor(getattr(student.causal, NAME)(remote, prompt, 3), what)
    # the values are test_generate's to judge: this test fails for the dtype alone
    if got.dtype != torch.int32:
        checks.fail(f"{what}: expected dtype torch.int32 (the prompt's), got {got.dtype}",
                    cause=Ex4Cause.GEN_INT64_APPENDED)


@pytest.mark.note("The contract says the result starts with the prompt; with max_new_tokens = 0, "
                  "returning the prompt itself (the generation loop of nanoGPT and the PyTorch "
                  "tutorials) modifies no input, so it is correct by it. Changing that result in "
                  "place would change the caller's prompt; the contract could say \"always a new "
                  "tensor\" to make this a rule.")
def test_generate_zero_new_tokens_returns_a_copy(student, support):
    """greedy_generate with max_new_tokens = 0 returns a copy of the prompt, not the prompt itself"""
    prompt = _prompt(2, 2, 3, torch.long)
    remote, _ = _models(support, 902)
    with checks.calling(f"causal.{NAME}"):
        result, aliases = support.autograd.call_and_check_aliasing(getattr(student.causal, NAME),
                                                                   [remote, prompt, 0])
    common.expect_tensor(result, f"{NAME}(model, prompt, 0)")
    if tuple(result.shape) != tuple(prompt.shape) or not torch.equal(result.long(), prompt):
        checks.fail(f"{NAME}(model, prompt, 0): expected the prompt's ids unchanged (shape "
                    f"{tuple(prompt.shape)}), got shape {tuple(result.shape)} with other values")
    if aliases[1]:
        checks.fail(f"{NAME}(model, prompt, 0) returned the prompt itself (or a view of it): the "
                    "docstring recommends a copy (kinder to the caller, not graded), so that changing the result "
                    "never changes the prompt",
                    cause=Ex4Cause.GEN_PROMPT_RETURNED)


@pytest.mark.note("The contract does not say that generation runs without gradients (accuracy's "
                  "row does, greedy_generate's does not): the tokens are the same either way; "
                  "only time and memory differ.")
def test_generate_runs_the_model_without_gradients(student, support):
    """greedy_generate runs the model inside torch.no_grad()"""
    prompt = _prompt(3, 1, 2, torch.long)
    remote, _ = _models(support, 903)
    common.expect_tensor(getattr(student.causal, NAME)(remote, prompt, 3), f"{NAME}(model, prompt, 3)")
    if not fetch(remote.call_shapes):
        checks.fail(f"{NAME}(model, prompt, 3) never called the model: this rule is judged on a "
                    "generation that runs it")
    with_grad = fetch(remote.calls_with_grad)
    if with_grad:
        checks.fail(f"{NAME}(model, prompt, 3) called the model {with_grad} time(s) with gradients "
                    "enabled: the tokens are right either way (this note costs no points), but inside "
                    "torch.no_grad() generation needs less time and memory",
                    cause=Ex4Cause.GEN_NO_NO_GRAD)
