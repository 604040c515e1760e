"""ex5 · path_length, train, accuracy, and the attention model learning the recall task."""
from __future__ import annotations

import pytest
import torch

from autograder.diagnosis import ex5 as mistakes
from autograder.suites.ex5_lstm_comparison.causes import Ex5Cause
from autograder.suites import checks
from autograder.suites.ex5_lstm_comparison import common, recall


@pytest.mark.points(0.5)
@pytest.mark.covers("path_length")
@pytest.mark.contract("path_length/steps", "path_length/signature")
@pytest.mark.covers("path_length:args/kind, seq_len")
def test_path_length(student):
    """path_length is seq_len − 1 for "lstm" and 1 for "attention", as an int"""
    for kind in ("lstm", "attention"):
        for n in (1, 2, 17, 300):
            got = student.lstm_vs_attention.path_length(kind, n)
            want = common.ref.path_length(kind, n)
            if not isinstance(got, int) or isinstance(got, bool):
                checks.fail(f"path_length({kind!r}, {n}) returned a {type(got).__name__}, expected an int")
            if got != want:
                hint = " (attention reaches position 0 in one step, whatever the length)" \
                    if kind == "attention" else " (one recurrent step per position after the first)"
                checks.fail(f"path_length({kind!r}, {n}) is not the number of sequential steps "
                            f"from position 0 to the last position{hint}",
                            cause=Ex5Cause.PATH_OFF_BY_ONE)


@pytest.mark.points(2)
@pytest.mark.covers("train")
@pytest.mark.contract("train/procedure", "train/signature")
@pytest.mark.covers("train:args/lr")
def test_train_losses(student, support):
    """train records each step's loss before its update (Adam, full batch, the given lr)"""
    steps, lr = 6, 0.03
    model, local = common.kit_pair(support, 90)
    tokens, labels = common.dataset(24, common.SEQ, common.VOCAB, 91)
    start = common.clone(local)
    inputs = checks.describe_inputs(tokens=tokens, labels=labels, steps=steps, lr=lr)
    got = student.lstm_vs_attention.train(model, tokens, labels, steps, lr)
    common.expect_float_list(got, steps, f"train(model, {inputs})")
    want = common.ref.train(local, tokens, labels, steps, lr)

    def wrong():
        out = mistakes.train_losses(start, tokens, labels, steps, lr)
        out[mistakes.IGNORED_LR] = common.floats(common.ref.train(common.clone(start), tokens, labels, steps))
        return out

    checks.expect_close(common.floats(got), common.floats(want), f"the losses of train(model, {inputs})",
                        rtol=common.RTOL, atol=common.ATOL, mistakes=wrong)
    with torch.no_grad():
        after = local(tokens)
    checks.expect_close(model(tokens), after, f"the model's logits after train(model, {inputs})",
                        rtol=1e-3, atol=1e-4)


@pytest.mark.points(0.5)
@pytest.mark.covers("train")
@pytest.mark.contract("train/signature", "train/procedure")
@pytest.mark.covers("train:args/steps = 0")
def test_train_default_lr_and_zero_steps(student, support):
    """train defaults to lr=1e-2 and leaves the model alone for steps=0"""
    steps = 4
    model, local = common.kit_pair(support, 100)
    tokens, labels = common.dataset(16, common.SEQ, common.VOCAB, 101)
    inputs = checks.describe_inputs(tokens=tokens, labels=labels, steps=steps)
    start = common.clone(local)
    if student.lstm_vs_attention.train(model, tokens, labels, 0) != []:
        checks.fail("train(model, tokens, labels, steps=0) must return an empty list")
    with torch.no_grad():
        before = local(tokens)
    checks.expect_close(model(tokens), before, "the model's logits after train(…, steps=0)",
                        rtol=1e-6, atol=1e-7)
    got = student.lstm_vs_attention.train(model, tokens, labels, steps)
    common.expect_float_list(got, steps, f"train(model, {inputs})")
    want = common.ref.train(local, tokens, labels, steps)
    checks.expect_close(common.floats(got), common.floats(want),
                        f"the losses of train(model, {inputs}) with the default lr",
                        rtol=common.RTOL, atol=common.ATOL,
                        mistakes=lambda: mistakes.train_losses(start, tokens, labels, steps, 1e-2))


@pytest.mark.points(1)
@pytest.mark.covers("accuracy")
@pytest.mark.contract("accuracy/fraction", "accuracy/signature")
def test_accuracy(student, support):
    """accuracy is the fraction of correct argmax predictions, as a Python float"""
    model, local = common.kit_pair(support, 110)
    train_tokens, train_labels = common.dataset(64, common.SEQ, common.VOCAB, 111)
    common.ref.train(local, train_tokens, train_labels, 30, 0.05)   # part-trained
    support.modules.load_weights(model, common.state_of(local))
    tokens, labels = common.dataset(80, common.SEQ, common.VOCAB, 112)
    for what, toks, labs in (("training samples", train_tokens, train_labels),
                             ("held-out samples", tokens, labels)):
        got = student.lstm_vs_attention.accuracy(model, toks, labs)
        want = common.ref.accuracy(local, toks, labs)
        call = f"accuracy(model, tokens, labels) on {len(labs)} {what}"
        if not isinstance(got, float):
            checks.fail(f"{call} returned a {type(got).__name__}, expected a Python float (use .item())",
                        cause=Ex5Cause.ACCURACY_TENSOR)
        if not 0.0 <= got <= 1.0:
            hint = " (a percentage? return a fraction)" if got <= 100 else \
                " (a count? divide by the number of samples)"
            checks.fail(f"{call} is {got:g}, outside [0, 1]{hint}",
                        cause=Ex5Cause.ACCURACY_PERCENT)
        if abs(got - want) > 1e-6:
            checks.fail(f"{call} is not the fraction of samples whose argmax logit equals the "
                        "label (it differs by more than 1e-6)")


@pytest.mark.points(0.5)
@pytest.mark.contract("accuracy/fraction")
@pytest.mark.covers("accuracy")
def test_accuracy_fraction_between_0_and_1(student, support):
    """accuracy is a fraction, not 0 or 1 only: labels that match 2 predictions in 3"""
    model, local = common.kit_pair(support, 120)
    tokens, _ = common.dataset(200, common.SEQ, common.VOCAB, 121)
    with torch.no_grad():
        top2 = local(tokens).topk(2, dim=-1)
    clear = (top2.values[:, 0] - top2.values[:, 1]) > 1e-3     # predictions no rounding can change
    tokens, predicted = tokens[clear][:60], top2.indices[clear][:60, 0]
    labels = predicted.clone()
    labels[2::3] = (labels[2::3] + 1) % common.CLASSES        # every third label wrong: two in three right
    right = int((labels == predicted).sum())
    got = student.lstm_vs_attention.accuracy(model, tokens, labels)
    call = f"accuracy(model, tokens, labels) with {len(labels)} samples, {right} predicted right"
    if not isinstance(got, (float, int)) or not abs(float(got) - right / len(labels)) <= 1e-6:   # NaN fails
        checks.fail(f"{call} is {got!r}, expected the fraction {right}/{len(labels)} ≈ {right / len(labels):.4f}")


# The end-to-end check: the kit's own Adam loop trains the student's AttentionClassifier on
# recall.py's first candidate set-up, and on the first the reference solves when that did not pass.
E2E, E2E_TRAIN, E2E_TEST, E2E_STEPS, E2E_LR = (recall.E2E, recall.E2E_TRAIN, recall.E2E_TEST,
                                               recall.E2E_STEPS, recall.E2E_LR)


def _trained_accuracy(student, support, offset: int) -> float:
    """The student's AttentionClassifier, from the reference's initial weights of candidate
    ``offset``, trained by the kit's loop: its held-out accuracy."""
    model, _ = common.pair(student, support, "attention", offset, **E2E)
    tokens, labels = recall.training_set(offset)
    test_tokens, test_labels = recall.held_out_set(offset)
    model(test_tokens[:2])                      # a broken forward fails here, under its own name
    losses = support.training.kit_train(model, tokens, labels, E2E_STEPS, E2E_LR, common.seed(0))
    if not all(loss == loss for loss in losses):
        checks.fail("training your AttentionClassifier with the kit's Adam loop produced a NaN loss")
    logits = model(test_tokens)
    checks.expect_shape(logits, (E2E_TEST, E2E["classes"]), "AttentionClassifier(tokens)")
    checks.expect_finite(logits, "AttentionClassifier(tokens) after training", "tokens (256, 32)")
    return float((checks.as_array(logits, "logits").argmax(-1) == test_labels.numpy()).mean())


@pytest.mark.points(1.5)
@pytest.mark.covers("AttentionClassifier")
@pytest.mark.contract("task", "AttentionClassifier/methods")
def test_attention_learns_recall(student, support):
    """trained by the kit's loop, AttentionClassifier recalls the first of 32 tokens"""
    verdict = recall.judge(lambda offset: _trained_accuracy(student, support, offset), recall.reference_accuracy)
    if not verdict.passed:
        checks.fail(f"after {E2E_STEPS} full-batch Adam steps (the kit's loop, lr {E2E_LR}) on "
                    f"{E2E_TRAIN} sequences of length 32, your AttentionClassifier predicts the "
                    f"first token of {verdict.accuracy:.0%} of held-out sequences; a correct model gets over "
                    f"{verdict.needed:.0%}. Check that the last position attends to every position, the "
                    "positional embeddings, and the 1/√d_model scaling")
