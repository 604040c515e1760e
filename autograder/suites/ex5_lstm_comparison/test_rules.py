"""ex5 · the exercise's rules on APIs."""
from __future__ import annotations

import pytest

from autograder.suites import checks
from autograder.suites.ex5_lstm_comparison import common


@pytest.mark.covers("rules", "AttentionClassifier")
@pytest.mark.points(0.5)
@pytest.mark.contract("banned")
@pytest.mark.covers("AttentionClassifier.__init__:banned", "AttentionClassifier.embed_inputs:banned", "AttentionClassifier.classify:banned", "AttentionClassifier.forward:banned")
def test_no_banned_apis(student, submission, support):
    """lstm_vs_attention.py writes its own attention (no nn.MultiheadAttention, no F.scaled_dot_product_attention; AttentionClassifier uses loaded weights and runs)"""
    # the point is for an implemented AttentionClassifier: one that uses the weights it loads
    common.expect_uses_loaded_weights(support, common.student_model(student, "attention"), "attention", "AttentionClassifier")
    tokens, _ = common.dataset(2, 5, common.VOCAB, 90)

    def run() -> None:                   # the point is for an implemented AttentionClassifier
        common.student_model(student, "attention")(tokens)

    checks.expect_no_banned_apis(
        submission, "ex5", run,
        rules="write the attention with matrix products and torch.softmax")
