"""ex4 · masks: create_causal_mask, create_padding_mask, combine_masks."""
from __future__ import annotations

import pytest
import torch

import reference.causal as ref
from autograder.suites.ex4_causal_mask.causes import Ex4Cause
from autograder.suites import checks, contract_rules
from autograder.suites.ex4_causal_mask import common

CAUSAL_WRONG = {
    Ex4Cause.STRICT: lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),
    Ex4Cause.MASK_UPPER_TRIANGULAR: lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
    Ex4Cause.MASK_MARKS_FUTURE: lambda n: ~torch.ones(n, n, dtype=torch.bool).tril(),
}


@pytest.mark.points(1.5)
@pytest.mark.parametrize("n", [1, 4, 7], ids=["n=1", "n=4", "n=7"])
@pytest.mark.covers("create_causal_mask")
@pytest.mark.contract("create_causal_mask/pattern")
@pytest.mark.covers("create_causal_mask:size/seq_len = 1")
def test_causal_mask_pattern(student, n):
    """create_causal_mask: bool (n, n), True on and below the diagonal"""
    got = student.causal.create_causal_mask(n)
    common.expect_mask(got, ref.create_causal_mask(n), f"create_causal_mask({n})", f"seq_len={n}",
                       {h: f(n) for h, f in CAUSAL_WRONG.items()})


@pytest.mark.covers("create_causal_mask:device")
@pytest.mark.points(1)
@pytest.mark.contract("create_causal_mask/signature")
@pytest.mark.covers("create_causal_mask:args/device")
def test_causal_mask_device_argument(student):
    """create_causal_mask accepts a device argument"""
    # Only the argument is judged here: the result with a device must be the student's own
    # create_causal_mask(5) on that device (the pattern itself is the test above).
    plain = student.causal.create_causal_mask(5)
    checks.expect_type(plain, torch.Tensor, "create_causal_mask(5)")
    checks.expect_all_finite(plain, "create_causal_mask(5)", "seq_len=5")
    for args, kwargs, label in [((5,), {"device": "cpu"}, "create_causal_mask(5, device='cpu')"),
                                ((5, "cpu"), {}, "create_causal_mask(5, 'cpu')"),
                                ((5,), {"device": None}, "create_causal_mask(5, device=None)")]:
        got = student.causal.create_causal_mask(*args, **kwargs)
        checks.expect_type(got, torch.Tensor, label)
        if got.device.type != "cpu":
            checks.fail(f"{label}: the mask is on {got.device}, expected cpu")
        if got.dtype != plain.dtype or tuple(got.shape) != tuple(plain.shape) or not torch.equal(got, plain):
            checks.fail(f"{label} differs from create_causal_mask(5): the device argument must change "
                        "only where the mask lives, not what it holds")


@pytest.mark.points(2)
@pytest.mark.covers("create_padding_mask")
@pytest.mark.contract("create_padding_mask/pattern", "create_padding_mask/signature")
def test_padding_mask(student):
    """create_padding_mask: bool (B, max_len), True at positions < lengths[b]"""
    lengths = torch.tensor([3, 1, 6, 4], dtype=torch.long)
    max_len = 6
    inputs = checks.describe_inputs(lengths=lengths, max_len=max_len)
    got = student.causal.create_padding_mask(lengths, max_len)
    pos = torch.arange(max_len)[None, :]
    wrong = {Ex4Cause.PADDING_LESS_EQUAL: pos <= lengths[:, None],
             Ex4Cause.PADDING_INVERTED: pos >= lengths[:, None]}
    common.expect_mask(got, ref.create_padding_mask(lengths, max_len), "create_padding_mask(lengths, max_len)",
                       inputs, wrong)


@pytest.mark.points(0.5)
@pytest.mark.covers("create_padding_mask")
@pytest.mark.contract("create_padding_mask/pattern")
def test_padding_mask_full_rows(student):
    """create_padding_mask with full-length rows"""
    lengths = torch.tensor([5, 2, 5], dtype=torch.long)
    inputs = checks.describe_inputs(lengths=lengths, max_len=5)
    got = student.causal.create_padding_mask(lengths, 5)
    common.expect_mask(got, ref.create_padding_mask(lengths, 5), "create_padding_mask(lengths, 5)", inputs)


@pytest.mark.points(2)
@pytest.mark.covers("combine_masks")
@pytest.mark.contract("combine_masks/pattern", "combine_masks/signature", "conventions/inputs")
@pytest.mark.covers("combine_masks:inputs/tensor")
def test_combine_masks(student, support):
    """combine_masks: (B, n, n) with [b, i, j] = causal[i, j] and padding[b, j]; inputs kept"""
    n = 5
    causal = ref.create_causal_mask(n)
    padding = ref.create_padding_mask(torch.tensor([5, 2, 4]), n)
    inputs = checks.describe_inputs(causal=causal, padding=padding)
    with checks.calling("causal.combine_masks"):
        got, changes = contract_rules.call_and_check_unchanged(support, student.causal.combine_masks,
                                                               [causal, padding])
    wrong = {Ex4Cause.COMBINE_PADS_QUERIES: causal[None] & padding[:, :, None],
             Ex4Cause.COMBINE_OR: causal[None] | padding[:, None, :]}
    common.expect_mask(got, ref.combine_masks(causal, padding), "combine_masks(causal, padding)", inputs, wrong)
    common.expect_unchanged(changes, ["causal", "padding"], "combine_masks")
