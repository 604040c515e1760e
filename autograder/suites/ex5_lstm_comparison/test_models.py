"""ex5 · the two classifiers: their submodules, and their outputs with the reference's weights."""
from __future__ import annotations

import pytest
import torch

from autograder.diagnosis import ex5 as mistakes
from autograder.diagnosis.causes import Cause
from autograder.suites.ex5_lstm_comparison.causes import Ex5Cause
from autograder.suites import checks
from autograder.suites.ex5_lstm_comparison import common

LSTM_CHILDREN = {"embed": "Embedding", "lstm": "LSTM", "head": "Linear"}
ATTENTION_CHILDREN = {"embed": "Embedding", "pos": "Embedding", "W_q": "Linear",
                      "W_k": "Linear", "W_v": "Linear", "head": "Linear"}


def _structure_cause(missing: list[str], extra: list[str]) -> Cause | None:
    if extra == ["W_o"] and not missing:
        return Ex5Cause.EXTRA_W_O
    if missing and extra and len(missing) == len(extra):
        return Ex5Cause.SUBMODULES_RENAMED
    return None


def _expect_structure(info: dict, reference: torch.nn.Module, wanted: dict, name: str) -> None:
    if not info["is_module"]:
        checks.fail(f"{name}(…) is a {info['type']}, expected a torch.nn.Module subclass")
    children = info["children"]
    missing = [c for c in wanted if c not in children]
    extra = [c for c in children if c not in wanted]
    if missing or extra:
        checks.fail(f"{name} must have exactly the submodules {', '.join(wanted)}"
                    + (f"; missing: {', '.join(missing)}" if missing else "")
                    + (f"; not in the spec: {', '.join(extra)}" if extra else ""),
                    cause=_structure_cause(missing, extra))
    kinds = {"LSTM": info["lstm"], "Linear": info["linear"], "Embedding": info["embedding"]}
    for child, kind in wanted.items():
        if child not in kinds[kind]:
            checks.fail(f"{name}.{child} is a {children[child]}, expected nn.{kind}")
    want = {k: list(v.shape) for k, v in reference.named_parameters()}
    got = info["parameters"]
    if set(got) != set(want):
        extra = sorted(set(got) - set(want))
        missing = sorted(set(want) - set(got))
        checks.fail(f"{name}'s parameters are not the spec's"
                    + (f"; unexpected: {', '.join(extra[:6])}" if extra else "")
                    + (f"; missing: {', '.join(missing[:6])}" if missing else ""))
    for k in sorted(want):
        if got[k] != want[k]:
            checks.fail(f"{name} parameter {k}: expected shape {tuple(want[k])}, got {tuple(got[k])}")


@pytest.mark.points(0.5)
@pytest.mark.covers("LSTMClassifier")
@pytest.mark.contract("LSTMClassifier/structure", "LSTMClassifier/init", "lstm-required")
@pytest.mark.covers("LSTMClassifier.__init__:structure")
def test_lstm_structure(student, support):
    """LSTMClassifier has exactly embed, lstm (an nn.LSTM with batch_first) and head, and uses loaded weights"""
    model = common.student_model(student, "lstm", vocab=7, d_model=10, classes=5)
    info = support.training.describe(model)
    reference = common.ref.LSTMClassifier(7, 10, 5)
    _expect_structure(info, reference, LSTM_CHILDREN, "LSTMClassifier")
    common.expect_uses_loaded_weights(support, model, "lstm", "LSTMClassifier", vocab=7, d_model=10, classes=5)
    lstm = info["lstm"]["lstm"]
    if not lstm["batch_first"]:
        checks.fail("LSTMClassifier.lstm must be created with batch_first=True (inputs are (B, n, d_model))",
                    cause=Ex5Cause.LSTM_NOT_BATCH_FIRST)
    if lstm["num_layers"] != 1 or lstm["bidirectional"] or lstm["proj_size"]:
        checks.fail("LSTMClassifier.lstm must be a one-layer, unidirectional nn.LSTM(d_model, d_model, batch_first=True)")
    if lstm["input_size"] != 10 or lstm["hidden_size"] != 10:
        checks.fail("LSTMClassifier.lstm must map d_model to d_model features: nn.LSTM(d_model, d_model, batch_first=True)")


@pytest.mark.points(0.5)
@pytest.mark.covers("AttentionClassifier")
@pytest.mark.contract("AttentionClassifier/structure", "AttentionClassifier/init")
@pytest.mark.covers("AttentionClassifier.__init__:structure")
def test_attention_structure(student, support):
    """AttentionClassifier has exactly embed, pos, W_q, W_k, W_v and head, and uses loaded weights"""
    model = common.student_model(student, "attention", vocab=7, d_model=10, classes=5, max_len=13)
    info = support.training.describe(model)
    reference = common.ref.AttentionClassifier(7, 10, 5, 13)
    _expect_structure(info, reference, ATTENTION_CHILDREN, "AttentionClassifier")
    common.expect_uses_loaded_weights(support, model, "attention", "AttentionClassifier", vocab=7, d_model=10,
                                      classes=5, max_len=13)


@pytest.mark.points(2)
@pytest.mark.covers("LSTMClassifier")
@pytest.mark.contract("LSTMClassifier/methods", "conventions/deterministic")
@pytest.mark.covers("LSTMClassifier.classify:dtype/float32")
def test_lstm_values(student, support):
    """LSTMClassifier: embed_inputs, classify (final hidden state) and forward match the reference"""
    model, reference = common.pair(student, support, "lstm", 10)
    tokens, _ = common.dataset(common.BATCH, common.SEQ, common.VOCAB, 11)
    inputs = checks.describe_inputs(tokens=tokens)
    with torch.no_grad():
        want_embed = reference.embed_inputs(tokens)
        x = torch.randn(common.BATCH, common.SEQ, common.D_MODEL, generator=common.seeds.generator(12))
        want_classify = reference.classify(x)
        want_logits = reference(tokens)
    got = model.embed_inputs(tokens)
    checks.expect_shape(got, tuple(want_embed.shape), "LSTMClassifier.embed_inputs(tokens)", inputs)
    checks.expect_close(got, want_embed, "LSTMClassifier.embed_inputs(tokens)", inputs=inputs,
                        rtol=common.RTOL, atol=common.ATOL)
    x_inputs = checks.describe_inputs(x=x)
    got = model.classify(x)
    checks.expect_shape(got, tuple(want_classify.shape), "LSTMClassifier.classify(x)", x_inputs)
    checks.expect_close(got, want_classify, "LSTMClassifier.classify(x)", inputs=x_inputs,
                        rtol=common.RTOL, atol=common.ATOL,
                        mistakes=lambda: mistakes.lstm_classify(reference, x))
    got = model(tokens)
    checks.expect_shape(got, tuple(want_logits.shape), "LSTMClassifier(tokens)", inputs)
    checks.expect_close(got, want_logits, "LSTMClassifier(tokens)", inputs=inputs,
                        rtol=common.RTOL, atol=common.ATOL,
                        mistakes=lambda: mistakes.lstm_forward(reference, tokens))


@pytest.mark.points(1)
@pytest.mark.covers("AttentionClassifier")
@pytest.mark.contract("AttentionClassifier/methods")
@pytest.mark.covers("AttentionClassifier.__init__:args/max_len > n")
def test_attention_embed_inputs(student, support):
    """AttentionClassifier.embed_inputs adds the positional embeddings of positions 0 … n−1"""
    model, reference = common.pair(student, support, "attention", 20)
    tokens, _ = common.dataset(common.BATCH, common.SEQ, common.VOCAB, 21)
    inputs = checks.describe_inputs(tokens=tokens, max_len=common.MAX_LEN)
    with torch.no_grad():
        want = reference.embed_inputs(tokens)
    got = model.embed_inputs(tokens)
    checks.expect_shape(got, tuple(want.shape), "AttentionClassifier.embed_inputs(tokens)", inputs)
    checks.expect_close(got, want, "AttentionClassifier.embed_inputs(tokens)", inputs=inputs,
                        rtol=common.RTOL, atol=common.ATOL,
                        mistakes=lambda: mistakes.attention_embed(reference, tokens))


@pytest.mark.points(0.5)
@pytest.mark.covers("AttentionClassifier")
@pytest.mark.contract("AttentionClassifier/methods")
def test_attention_embed_inputs_many_lengths(student, support):
    """one AttentionClassifier's embed_inputs with n = 3, then 9, then 6 adds positions 0 … n−1 each time"""
    model, reference = common.pair(student, support, "attention", 22)
    for n in (3, 9, 6):
        tokens, _ = common.dataset(2, n, common.VOCAB, 23 + n)
        what = f"AttentionClassifier.embed_inputs(tokens) with n = {n}, after calls with other lengths (the same model)"
        inputs = checks.describe_inputs(tokens=tokens, max_len=common.MAX_LEN)
        with torch.no_grad():
            want = reference.embed_inputs(tokens)
        got = model.embed_inputs(tokens)
        checks.expect_shape(got, tuple(want.shape), what, inputs)
        checks.expect_close(got, want, what, inputs=inputs, rtol=common.RTOL, atol=common.ATOL,
                            mistakes=lambda: mistakes.attention_embed(reference, tokens))


@pytest.mark.points(2)
@pytest.mark.covers("AttentionClassifier")
@pytest.mark.contract("AttentionClassifier/methods")
@pytest.mark.covers("AttentionClassifier.classify:dtype/float32")
def test_attention_classify(student, support):
    """AttentionClassifier.classify: scaled self-attention, head of the LAST position"""
    model, reference = common.pair(student, support, "attention", 30)
    x = torch.randn(common.BATCH, common.SEQ, common.D_MODEL,
                    generator=common.seeds.generator(31)) * 1.5
    inputs = checks.describe_inputs(x=x)
    with torch.no_grad():
        want = reference.classify(x)
    got = model.classify(x)
    checks.expect_shape(got, tuple(want.shape), "AttentionClassifier.classify(x)", inputs)
    checks.expect_close(got, want, "AttentionClassifier.classify(x)", inputs=inputs,
                        rtol=common.RTOL, atol=common.ATOL,
                        mistakes=lambda: mistakes.attention_classify(reference, x))


@pytest.mark.points(0.5)
@pytest.mark.covers("AttentionClassifier")
@pytest.mark.contract("AttentionClassifier/methods")
def test_attention_forward(student, support):
    """AttentionClassifier(tokens) = classify(embed_inputs(tokens)) matches the reference"""
    model, reference = common.pair(student, support, "attention", 40)
    tokens, _ = common.dataset(common.BATCH + 2, common.SEQ + 2, common.VOCAB, 41)
    inputs = checks.describe_inputs(tokens=tokens, max_len=common.MAX_LEN)
    with torch.no_grad():
        want = reference(tokens)
    got = model(tokens)
    checks.expect_shape(got, tuple(want.shape), "AttentionClassifier(tokens)", inputs)
    checks.expect_close(got, want, "AttentionClassifier(tokens)", inputs=inputs,
                        rtol=common.RTOL, atol=common.ATOL,
                        mistakes=lambda: mistakes.attention_forward(reference, tokens))


@pytest.mark.points(1)
@pytest.mark.parametrize("kind", ["lstm", "attention"], ids=["LSTMClassifier", "AttentionClassifier"])
@pytest.mark.contract("LSTMClassifier/methods", "AttentionClassifier/methods")
@pytest.mark.covers("LSTMClassifier", "AttentionClassifier")
def test_batch_of_one(student, kind, support):
    """a batch of one sequence (B = 1) gives logits (1, num_classes) matching the reference"""
    name = {"lstm": "LSTMClassifier", "attention": "AttentionClassifier"}[kind]
    model, reference = common.pair(student, support, kind, 50)
    tokens, _ = common.dataset(1, common.SEQ, common.VOCAB, 51)
    inputs = checks.describe_inputs(tokens=tokens)
    with torch.no_grad():
        want = reference(tokens)
    got = model(tokens)
    checks.expect_shape(got, tuple(want.shape), f"{name}(tokens)", inputs)
    checks.expect_close(got, want, f"{name}(tokens)", inputs=inputs, rtol=common.RTOL, atol=common.ATOL)
