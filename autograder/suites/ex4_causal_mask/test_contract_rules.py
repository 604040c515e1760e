"""ex4 · the contract's general rules: inputs of every kind left alone, the device kept (meta
tensors, the device argument), a max_len the lengths do not imply (the exercise's rows in exercise.py list what each test covers)."""
from __future__ import annotations

import pytest
import torch

import reference.causal as ref
from autograder.suites.ex4_causal_mask.causes import Ex4Cause
from autograder.suites import checks
from autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta, kind_id
from autograder.suites.ex4_causal_mask import common

PADDING_WIDTH = Ex4Cause.PADDING_WIDTH


def _attention_args(offset: int, dtype=torch.float64) -> list[torch.Tensor]:
    x = common.randn(offset, 2, 4, 3, dtype=dtype)
    return [x, *common.weights(offset, 3, 2, 2, dtype)]


def _next_args(offset: int, dtype=torch.float64) -> list[torch.Tensor]:
    return [common.randn(offset, 2, 3, dtype=dtype), common.randn(offset + 1, 2, 4, 3, dtype=dtype),
            common.randn(offset + 2, 2, 4, 2, dtype=dtype)]


def _padding_args(_offset: int) -> list:
    return [torch.tensor([3, 1, 4], dtype=torch.long), 5]


def _combine_args(_offset: int) -> list:
    return [ref.create_causal_mask(4), ref.create_padding_mask(torch.tensor([4, 2]), 4)]


# function -> (inputs, their names, which arguments are arrays, the kinds its inputs may be)
CASES = {
    "create_padding_mask": (_padding_args, ["lengths", "max_len"], [0], ("tensor", "shared")),
    "combine_masks": (_combine_args, ["causal", "padding"], None, ("shared",)),
    "causal_self_attention": (_attention_args, ["x", "W_q", "W_k", "W_v"], None, ("shared", "grad")),
    "attend_next": (_next_args, ["q_t", "K_cache", "V_cache"], None, ("shared", "grad")),
}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("name, kind", [
    pytest.param(name, kind, id=f"{name}, {kind_id(kind)}", marks=pytest.mark.covers(name, f"{name}:inputs/{kind}"))
    for name, (_, _, _, kinds) in CASES.items() for kind in kinds])
@pytest.mark.contract("conventions/inputs")
def test_inputs_unchanged_every_kind(student, support, name, kind):
    """the function leaves its inputs unchanged, whatever kind of tensor they are"""
    make, names, which, _ = CASES[name]
    expect_inputs_unchanged(support, getattr(student.causal, name), f"causal.{name}", make(80),
                            names, kind, which=which)


@pytest.mark.covers("greedy_generate", "greedy_generate:inputs/shared")
@pytest.mark.points(0.25)
@pytest.mark.contract("conventions/inputs")
def test_generate_leaves_shared_prompt_unchanged(student, support):
    """greedy_generate leaves the prompt unchanged when it shares memory with a NumPy array"""
    model = support.lm.build(vocab_size=11, seed=common.seed(81), tie_period=None)
    prompt = torch.randint(0, 11, (2, 3), generator=common.gen(781))
    expect_inputs_unchanged(support, student.causal.greedy_generate, "causal.greedy_generate",
                            [model, prompt, 3], ["model", "prompt", "max_new_tokens"], "shared", which=[1])


@pytest.mark.covers("create_causal_mask", "create_causal_mask:device")
@pytest.mark.points(0.5)
@pytest.mark.contract("create_causal_mask/signature", "conventions/device")
def test_causal_mask_on_given_device(student, support):
    """create_causal_mask(n, device=…) creates the mask on that device (the meta device here)"""
    expect_on_meta(support, student.causal.create_causal_mask, "create_causal_mask(5, device='meta')", [5],
                   kwargs={"device": "meta"}, which=[], outputs=["the mask"], dtype="bool", shapes=[(5, 5)],
                   on_cpu_cause=Ex4Cause.DEVICE_ARGUMENT_UNUSED)


# function -> (inputs, outputs, their dtype and shapes) on the meta device
META = {
    "combine_masks": (_combine_args, ["the mask"], "bool", [(2, 4, 4)]),
    "causal_self_attention": (lambda o: _attention_args(o, torch.float32), ["output", "weights"], "float32",
                              [(2, 4, 2), (2, 4, 4)]),
    "attend_next": (lambda o: _next_args(o, torch.float32), ["output", "weights"], "float32", [(2, 2), (2, 4)]),
}


@pytest.mark.points(0.5)
@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=pytest.mark.covers(n, f"{n}:device")) for n in META])
@pytest.mark.contract("conventions/device")
def test_keeps_device(student, support, name):
    """the function keeps the device: meta tensors in, meta tensors of the same dtype out"""
    make, outputs, dtype, shapes = META[name]
    expect_on_meta(support, getattr(student.causal, name), f"causal.{name}", make(82),
                   outputs=outputs, dtype=dtype, shapes=shapes)


@pytest.mark.covers("create_padding_mask", "create_padding_mask:args/max_len > max(lengths)")
@pytest.mark.points(0.75)
@pytest.mark.contract("create_padding_mask/pattern")
def test_padding_mask_longer_than_lengths(student):
    """create_padding_mask with max_len larger than every length: (B, max_len), padding at the end"""
    lengths, max_len = torch.tensor([3, 1, 4], dtype=torch.long), 7
    inputs = checks.describe_inputs(lengths=lengths, max_len=max_len)
    got = common.expect_tensor(student.causal.create_padding_mask(lengths, max_len),
                               "create_padding_mask(lengths, max_len)")
    if tuple(got.shape) == (3, int(lengths.max())):
        checks.fail(f"create_padding_mask(lengths, max_len): expected shape (3, {max_len}), got "
                    f"{tuple(got.shape)} (inputs: {inputs})", PADDING_WIDTH)
    common.expect_mask(got, ref.create_padding_mask(lengths, max_len), "create_padding_mask(lengths, max_len)",
                       inputs)
