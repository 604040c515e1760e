"""ex4 · the shape rules at their smallest sizes: a batch of one sequence, one position.

Students' crashes live there (a ``squeeze()`` that drops the batch axis, a mask built from
``lengths.max()`` rows). One position and a cache of one position have tests of their own
(test_causal_attention.py, test_decoding.py)."""
from __future__ import annotations

import pytest
import torch

import reference.causal as ref
from autograder.suites import checks
from autograder.suites.ex4_causal_mask import common
from autograder.suites.ex4_causal_mask.test_decoding import _check as check_attend_next


@pytest.mark.points(0.5)
@pytest.mark.contract("create_padding_mask/pattern", "combine_masks/pattern")
@pytest.mark.covers("create_padding_mask", "combine_masks", "create_padding_mask:size/B = 1",
                    "combine_masks:size/n = 1, B = 1")
def test_masks_of_one_sequence(student):
    """create_padding_mask for one sequence (B = 1); combine_masks with n = 1 and B = 1"""
    lengths = torch.tensor([3], dtype=torch.long)
    inputs = checks.describe_inputs(lengths=lengths, max_len=5)
    got = student.causal.create_padding_mask(lengths, 5)
    common.expect_mask(got, ref.create_padding_mask(lengths, 5), "create_padding_mask(lengths, 5)", inputs)
    causal, padding = ref.create_causal_mask(1), ref.create_padding_mask(torch.tensor([1]), 1)
    got = student.causal.combine_masks(causal, padding)
    common.expect_mask(got, ref.combine_masks(causal, padding), "combine_masks(causal (1, 1), padding (1, 1))",
                       checks.describe_inputs(causal=causal, padding=padding))


@pytest.mark.points(0.5)
@pytest.mark.contract("attend_next")
@pytest.mark.covers("attend_next", "attend_next:size/B = 1")
def test_attend_next_one_sequence(student):
    """attend_next for a batch of one sequence (B = 1)"""
    q, K, V = common.randn(90, 1, 4), common.randn(91, 1, 5, 4), common.randn(92, 1, 5, 3)
    check_attend_next(student, q, K, V)
