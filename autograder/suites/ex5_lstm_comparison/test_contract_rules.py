"""ex5 · the contract's general rules: inputs of every kind left alone, dtype and device kept
by the classifiers' methods (the exercise's rows in exercise.py list what each test covers)."""
from __future__ import annotations

import pytest
import torch

from autograder import seeds
from autograder.diagnosis import ex5 as mistakes
from autograder.suites import checks
from autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta, kind_id
from autograder.suites.ex5_lstm_comparison import common

CLASSES = {"lstm": "LSTMClassifier", "attention": "AttentionClassifier"}
# method -> (its input: "tokens" or "x", the kinds of tensor it may be)
METHODS = {"embed_inputs": ("tokens", ("tensor", "shared")), "classify": ("x", ("tensor", "shared", "grad")),
           "forward": ("tokens", ("tensor", "shared"))}


def _input(what: str, dtype=torch.float32) -> torch.Tensor:
    if what == "tokens":
        return common.dataset(3, 6, common.VOCAB, 140)[0]
    return torch.randn(3, 6, common.D_MODEL, generator=seeds.generator(141),
                       dtype=torch.float64).to(dtype)


def _bound(model, method: str):
    return model if method == "forward" else getattr(model, method)


@pytest.mark.points(0.2)
@pytest.mark.parametrize("kind_model, method, kind", [
    pytest.param(m, meth, k, id=f"{CLASSES[m]}.{meth}, {kind_id(k)}",
                 marks=pytest.mark.covers(CLASSES[m], f"{CLASSES[m]}.{meth}:inputs/{k}"))
    for m in CLASSES for meth, (_, kinds) in METHODS.items() for k in kinds])
@pytest.mark.contract("conventions/inputs")
def test_methods_leave_inputs_unchanged(student, support, kind_model, method, kind):
    """the classifier's method leaves its input unchanged, whatever kind of tensor it is"""
    model = common.student_model(student, kind_model)
    what, _ = METHODS[method]
    expect_inputs_unchanged(support, _bound(model, method), f"{CLASSES[kind_model]}.{method}",
                            [_input(what)], [what], kind)


@pytest.mark.points(0.4)
@pytest.mark.parametrize("kind_model, method", [
    pytest.param(m, meth, id=f"{CLASSES[m]}.{meth}", marks=pytest.mark.covers(CLASSES[m], f"{CLASSES[m]}.{meth}:device"))
    for m in CLASSES for meth in METHODS])
@pytest.mark.contract("conventions/device")
def test_methods_keep_device(student, support, kind_model, method):
    """the classifier's method keeps the device: model and input on meta give a meta result"""
    model = common.student_model(student, kind_model)
    what, _ = METHODS[method]
    shape = (3, 6, common.D_MODEL) if method == "embed_inputs" else (3, common.CLASSES)
    expect_on_meta(support, model, f"{CLASSES[kind_model]}.{method} (model and {what} on the meta device)",
                   [_input(what)], method=None if method == "forward" else method,
                   outputs=["the result"], dtype="float32", shapes=[shape])


@pytest.mark.points(0.5)
@pytest.mark.parametrize("kind_model", [
    pytest.param(m, id=CLASSES[m], marks=pytest.mark.covers(CLASSES[m], f"{CLASSES[m]}.classify:dtype/float64"))
    for m in CLASSES])
@pytest.mark.contract("conventions/dtype")
def test_classify_keeps_float64(student, kind_model, support):
    """after .double(), classify keeps float64 and matches the reference"""
    model, reference = common.pair(student, support, kind_model, 142)
    model.double()
    reference = reference.double()
    x = _input("x", torch.float64)
    inputs = checks.describe_inputs(x=x)
    what = f"{CLASSES[kind_model]}.classify(float64 x) of a float64 model"
    got = model.classify(x)
    checks.expect_dtype(got, torch.float64, what)
    with torch.no_grad():
        want = reference.classify(x)
    wrong = mistakes.lstm_classify if kind_model == "lstm" else mistakes.attention_classify
    checks.expect_close(got, want, what, inputs=inputs, rtol=1e-7, atol=1e-9, mistakes=lambda: wrong(reference, x))


# function -> (its arguments after the model, their names)
FUNCTIONS = ("input_gradient_norms", "train", "accuracy")


@pytest.mark.points(0.25)
@pytest.mark.parametrize("name, kind", [
    pytest.param(n, k, id=f"{n}, {kind_id(k)}", marks=pytest.mark.covers(n, f"{n}:inputs/{k}"))
    for n in FUNCTIONS for k in ("tensor", "shared")])
@pytest.mark.contract("conventions/inputs")
def test_functions_leave_tokens_and_labels_unchanged(student, support, name, kind):
    """the function leaves tokens and labels unchanged, whatever kind of tensor they are"""
    model, _ = common.kit_pair(support, 143)
    tokens, labels = common.dataset(4, 6, common.VOCAB, 144)
    extra = [2] if name == "train" else []
    expect_inputs_unchanged(support, getattr(student.lstm_vs_attention, name), f"lstm_vs_attention.{name}",
                            [model, tokens, labels, *extra], ["model", "tokens", "labels", "steps"][:3 + len(extra)],
                            kind, which=[1, 2])
