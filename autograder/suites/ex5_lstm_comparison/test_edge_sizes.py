"""ex5 · the shape rules at their smallest sizes: a batch of one sequence (B = 1), one token (n = 1).

Students' crashes live there: ``h_n.squeeze()`` drops the batch axis of a single sequence
(logits ``(num_classes,)`` instead of ``(1, num_classes)``), and one token leaves attention one
key to attend to."""
from __future__ import annotations

import pytest
import torch

from autograder.suites import checks
from autograder.suites.ex5_lstm_comparison import common

CASES = {"lstm": "LSTMClassifier", "attention": "AttentionClassifier"}


@pytest.mark.points(0.5)
@pytest.mark.parametrize("kind", [pytest.param(k, id=name, marks=pytest.mark.covers(
    name, f"{name}.classify:size/B = 1", f"{name}.classify:size/one token")) for k, name in CASES.items()])
@pytest.mark.contract("LSTMClassifier/methods", "AttentionClassifier/methods")
def test_classify_one_sequence_and_one_token(student, kind, support):
    """classify and forward on a batch of one sequence (B = 1) and on sequences of one token (n = 1)"""
    name = CASES[kind]
    model, reference = common.pair(student, support, kind, 40)
    for offset, (B, n) in enumerate(((1, common.SEQ), (3, 1))):
        x = torch.randn(B, n, common.D_MODEL, generator=common.seeds.generator(41 + offset))
        tokens, _ = common.dataset(B, n, common.VOCAB, 43 + offset)
        with torch.no_grad():
            want_classify, want_logits = reference.classify(x), reference(tokens)
        x_inputs, inputs = checks.describe_inputs(x=x), checks.describe_inputs(tokens=tokens)
        got = model.classify(x)
        checks.expect_shape(got, tuple(want_classify.shape), f"{name}.classify(x)", x_inputs)
        checks.expect_close(got, want_classify, f"{name}.classify(x)", inputs=x_inputs,
                            rtol=common.RTOL, atol=common.ATOL)
        got = model(tokens)
        checks.expect_shape(got, tuple(want_logits.shape), f"{name}(tokens)", inputs)
        checks.expect_close(got, want_logits, f"{name}(tokens)", inputs=inputs, rtol=common.RTOL, atol=common.ATOL)
