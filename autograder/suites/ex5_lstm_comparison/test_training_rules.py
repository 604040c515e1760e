"""ex5 · the docstrings' rules for accuracy and path_length beyond their values."""
from __future__ import annotations

import pytest

from autograder.suites.ex5_lstm_comparison.causes import Ex5Cause
from autograder.sandbox import StudentError, fetch
from autograder.suites import checks
from autograder.suites.ex5_lstm_comparison import common


@pytest.mark.covers("accuracy:rules/model run without gradients", "accuracy")
@pytest.mark.points(0.5)
@pytest.mark.contract("accuracy/fraction")
def test_accuracy_runs_the_model_without_gradients(student, support):
    """accuracy runs the model inside torch.no_grad()"""
    model, _ = common.kit_pair(support, 120)
    tokens, labels = common.dataset(16, common.SEQ, common.VOCAB, 121)
    got = student.lstm_vs_attention.accuracy(model, tokens, labels)
    checks.expect_type(got, float, "accuracy(model, tokens, labels)")
    if not 0.0 <= got <= 1.0:
        checks.fail(f"accuracy(model, tokens, labels) is {got:g}, outside [0, 1]")
    with_grad = fetch(model.calls_with_grad)
    if with_grad:
        checks.fail(f"accuracy(model, tokens, labels) called the model {with_grad} time(s) with "
                    "gradients enabled: the docstring asks for torch.no_grad()",
                    cause=Ex5Cause.ACCURACY_NO_NO_GRAD)


@pytest.mark.covers("path_length")
@pytest.mark.note("The contract defines path_length for the kinds \"lstm\" and \"attention\" and says "
                  "nothing of any other: returning a number, or raising KeyError from a table, is "
                  "correct by it. The contract could say \"raises ValueError for any other kind\" "
                  "to make this a rule.")
def test_path_length_refuses_other_kinds(student):
    """path_length raises ValueError for any kind but the exact strings 'lstm' and 'attention'"""
    for kind in ("LSTM", "Attention", "rnn", ""):
        try:
            got = student.lstm_vs_attention.path_length(kind, 5)
        except StudentError as exc:
            if exc.raised != "ValueError":
                checks.fail(f"path_length({kind!r}, 5) raised {exc.raised}, expected ValueError")
            continue
        checks.fail(f"path_length({kind!r}, 5) returned {got!r}: only the exact lower-case strings "
                    '"lstm" and "attention" are kinds; anything else raises ValueError',
                    cause=Ex5Cause.PATH_CASE_INSENSITIVE)
