"""ex5 · make_recall_dataset: the exact tensors of the spec, labels a copy."""
from __future__ import annotations

import pytest
import torch

from autograder.diagnosis import ex5 as mistakes
from autograder.suites.ex5_lstm_comparison.causes import Ex5Cause
from autograder.suites import checks
from autograder.suites.ex5_lstm_comparison import common


def _check_dataset(out, num, seq, vocab, seed):
    inputs = checks.describe_inputs(num_samples=num, seq_len=seq, vocab_size=vocab, seed=seed)
    tokens, labels = checks.expect_tuple(out, 2, f"make_recall_dataset({inputs})")
    checks.expect_type(tokens, torch.Tensor, "tokens")
    checks.expect_type(labels, torch.Tensor, "labels")
    checks.expect_dtype(tokens, torch.int64, "tokens")
    checks.expect_dtype(labels, torch.int64, "labels")
    checks.expect_shape(tokens, (num, seq), "tokens", inputs)
    checks.expect_shape(labels, (num,), "labels", inputs)
    if int(tokens.min()) < 1 or int(tokens.max()) > vocab - 1:
        checks.fail(f"tokens must lie in 1 … vocab_size − 1 ({inputs}); got values from "
                    f"{int(tokens.min())} to {int(tokens.max())}",
                    cause=Ex5Cause.TOKENS_FROM_ZERO if int(tokens.min()) == 0 else None)
    if not torch.equal(labels, tokens[:, 0]):
        checks.fail(f"labels must equal tokens[:, 0] ({inputs})", cause=mistakes.dataset_labels(tokens, labels))
    want_tokens, want_labels = common.ref.make_recall_dataset(num, seq, vocab, seed)
    if not torch.equal(tokens, want_tokens):
        checks.fail(f"tokens are not the ones the spec's recipe draws ({inputs}): use "
                    "g = torch.Generator().manual_seed(seed) and "
                    "torch.randint(1, vocab_size, (num_samples, seq_len), generator=g), "
                    "with nothing drawn from g before")
    checks.expect_equal(labels, want_labels, "labels", inputs=inputs)


@pytest.mark.points(1.5)
@pytest.mark.covers("make_recall_dataset")
@pytest.mark.contract("make_recall_dataset/recipe", "make_recall_dataset/signature")
@pytest.mark.covers("make_recall_dataset:args/num_samples, seq_len, vocab_size, seed")
def test_dataset_exact(student):
    """make_recall_dataset draws exactly the spec's tokens and labels"""
    for num, seq, vocab, offset in ((23, 7, 13, 1), (6, 40, 5, 2)):
        seed = common.seed(offset)
        _check_dataset(student.lstm_vs_attention.make_recall_dataset(num, seq, vocab, seed),
                       num, seq, vocab, seed)
    a, _ = student.lstm_vs_attention.make_recall_dataset(8, 10, 50, common.seed(3))
    b, _ = student.lstm_vs_attention.make_recall_dataset(8, 10, 50, common.seed(4))
    if torch.equal(a, b):
        checks.fail("make_recall_dataset returned the same tokens for two different seeds")


@pytest.mark.points(0.5)
@pytest.mark.covers("make_recall_dataset")
@pytest.mark.contract("make_recall_dataset/recipe")
def test_labels_are_a_copy(student, support):
    """make_recall_dataset returns labels as a copy, not a view of tokens"""
    made = student.lstm_vs_attention.make_recall_dataset(12, 6, 9, common.seed(5))   # errors name the student's function
    checks.expect_all_finite(made, "make_recall_dataset(12, 6, 9, seed)")
    shares = support.training.outputs_share_memory(
        student.lstm_vs_attention.make_recall_dataset, 12, 6, 9, common.seed(5))
    if len(shares) >= 2 and shares[1][0]:
        checks.fail("labels share memory with tokens (tokens[:, 0] is a view): return "
                    "tokens[:, 0].clone(), so that changing one never changes the other",
                    cause=Ex5Cause.LABELS_VIEW)
