"""Shared set-up for the ex5 hidden suite (grader side; not a test file).

Every model test builds the REFERENCE model from a seed, sends its weights to the
student's model with ``load_state_dict`` and compares the two on the same inputs, so the
student's own initialisation never matters. Every ``seed`` argument is an offset into the
current test's derived seeds (``autograder.seeds``); the public tests use literal ones.
"""
from __future__ import annotations

import copy

import torch

import reference.lstm_vs_attention as ref
from autograder import seeds
from autograder.suites.ex5_lstm_comparison.causes import Ex5Cause
from autograder.sandbox import StudentError
from autograder.suites import checks
from autograder.support.training import KitClassifier



def seed(offset: int) -> int:
    """The current test's seed number ``offset``."""
    return seeds.seed(offset)

# sizes: n < max_len so that pos(arange(n)) and pos.weight differ
VOCAB, D_MODEL, CLASSES, MAX_LEN = 11, 16, 11, 12
BATCH, SEQ = 5, 9

# float32 throughout, as the models are built by default
RTOL, ATOL = 1e-4, 1e-5


def reference_model(kind: str, seed: int, vocab: int = VOCAB, d_model: int = D_MODEL,
                    classes: int = CLASSES, max_len: int = MAX_LEN, name: str | None = None) -> torch.nn.Module:
    """The reference model with its initial weights from seed ``seed`` of the current test
    (``name``: of that test's node id instead)."""
    torch.manual_seed(seeds.seed(seed, name))
    if kind == "lstm":
        return ref.LSTMClassifier(vocab, d_model, classes)
    return ref.AttentionClassifier(vocab, d_model, classes, max_len)


def student_model(student, kind: str, vocab: int = VOCAB, d_model: int = D_MODEL,
                  classes: int = CLASSES, max_len: int = MAX_LEN):
    module = student.lstm_vs_attention
    if kind == "lstm":
        return module.LSTMClassifier(vocab, d_model, classes)
    return module.AttentionClassifier(vocab, d_model, classes, max_len)


def state_of(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def load(support, remote_model, reference: torch.nn.Module, name: str) -> None:
    """Give the student's model the reference's weights (the spec's submodule names; its own
    buffers, which the contract leaves free, are kept: ``support.modules.load_weights``)."""
    try:
        support.modules.load_weights(remote_model, state_of(reference))
    except StudentError as exc:
        first = str(exc).split("\nwhere")[0][:600]
        checks.fail(f"the grader could not load weights into your {name} with "
                    f"load_state_dict; its submodules and parameters must be exactly those of "
                    f"the spec ({first})")


def pair(student, support, kind: str, seed: int, **sizes):
    """(student model with the reference weights, reference model)."""
    reference = reference_model(kind, seed, **sizes)
    name = "LSTMClassifier" if kind == "lstm" else "AttentionClassifier"
    remote = student_model(student, kind, **sizes)
    load(support, remote, reference, name)
    return remote, reference


# The kit's own classifier (autograder.support.training.KitClassifier): train, accuracy and
# input_gradient_norms are judged on it, so that a mistake in the student's models does not
# cost those tests too. The same seeded weights are built in the grader and in the worker.
KIT = dict(vocab_size=VOCAB, d_model=8, num_classes=CLASSES, max_len=MAX_LEN)


def kit_pair(support, seed: int):
    """(the kit's classifier in the worker, the same model in the grader)."""
    local = KitClassifier(**KIT, seed=seeds.seed(seed))
    remote = support.training.kit_classifier(*KIT.values(), seeds.seed(seed))
    return remote, local


def expect_uses_loaded_weights(support, remote_model, kind: str, name: str, **sizes) -> None:
    """``remote_model`` (the student's, in the worker) loads two different reference states
    and gives finite logits that differ between them: its forward really uses the weights
    it was given. The comparison is made here, in the grader."""
    vocab = sizes.get("vocab", VOCAB)
    tokens, _ = dataset(3, 5, vocab, 902)
    logits = []
    for offset in (900, 901):
        load(support, remote_model, reference_model(kind, offset, **sizes), name)
        got = remote_model(tokens)
        checks.expect_shape(got, (3, sizes.get("classes", CLASSES)), f"{name}(tokens)",
                            checks.describe_inputs(tokens=tokens))
        checks.expect_all_finite(got, f"{name}(tokens)", checks.describe_inputs(tokens=tokens))
        logits.append(torch.as_tensor(got).detach().double())
    if not float((logits[0] - logits[1]).abs().max()) > 1e-6:
        checks.fail(f"{name}: the logits did not change when load_state_dict gave the model different "
                    "weights: forward must use the loaded submodules (do not re-create them after "
                    "__init__, and do not override load_state_dict)")


def dataset(num: int, seq: int, vocab: int, seed: int, name: str | None = None):
    """A recall data set from seed ``seed`` of the current test (``name``: of that test's node id)."""
    return ref.make_recall_dataset(num, seq, vocab, seeds.seed(seed, name))


def floats(x: torch.Tensor | list) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float64)


def clone(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model)


def expect_float_list(value, length: int, what: str) -> None:
    if not isinstance(value, list):
        checks.fail(f"{what}: expected a list of Python floats, got {type(value).__name__}")
    if len(value) != length:
        checks.fail(f"{what}: expected {length} losses (one per step), got {len(value)}")
    for i, v in enumerate(value):
        if not isinstance(v, float):
            checks.fail(f"{what}: entry {i} is a {type(v).__name__}, expected a Python float",
                        cause=Ex5Cause.LOSS_TENSOR_RECORDED if "Tensor" in type(v).__name__ else None)
