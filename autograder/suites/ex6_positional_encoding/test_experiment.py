"""ex6 · make_copy_task (exact tensors) and extrapolation_experiment (what it shows)."""
from __future__ import annotations

import math

import pytest
import torch

import reference.positional as ref
from autograder.suites import checks
from autograder.suites.ex6_positional_encoding import common

KEYS = {"sinusoidal_train", "sinusoidal_long", "learned_train", "learned_long"}


@pytest.mark.points(1.5)
@pytest.mark.parametrize("position", [0, 3], ids=["position=0", "position=3"])
@pytest.mark.covers("make_copy_task")
@pytest.mark.contract("make_copy_task/recipe", "make_copy_task/signature")
@pytest.mark.covers("make_copy_task:args/position")
def test_copy_task(student, position):
    """make_copy_task: the exact tokens and labels"""
    s = common.seed(100 + position)
    args = (9, 6, 5, position, s)
    inputs = f"num_samples=9, seq_len=6, vocab_size=5, position={position}, seed=<hidden>"
    got = checks.expect_tuple(student.positional.make_copy_task(*args), 2, "make_copy_task(…)")
    want_tokens, want_labels = ref.make_copy_task(*args)
    for value, want, what in ((got[0], want_tokens, "tokens"), (got[1], want_labels, "labels")):
        common.expect_tensor(value, what)
        checks.expect_shape(value, tuple(want.shape), what, inputs)
        checks.expect_dtype(value, torch.int64, what)
    wrong_vocab = torch.randint(1, 5, (9, 6), generator=torch.Generator().manual_seed(s))
    if torch.equal(got[0], wrong_vocab):
        checks.fail(f"tokens: not the expected tokens (inputs: {inputs})",
                    "tokens drawn from [1, vocab_size): this task uses every token, torch.randint(0, vocab_size, …)")
    checks.expect_equal(got[0], want_tokens, "tokens", inputs=inputs)
    if 0 <= position + 1 < 6 and torch.equal(got[1], want_tokens[:, position + 1]):
        checks.fail(f"labels: not the expected labels (inputs: {inputs})",
                    "labels taken from position + 1: positions count from 0, labels = tokens[:, position]")
    checks.expect_equal(got[1], want_labels, "labels", inputs=inputs)


@pytest.fixture(scope="module")
def experiment(student):
    """extrapolation_experiment with the defaults and a hidden seed, run once."""
    return student.positional.extrapolation_experiment(seed=common.seed(200, name="experiment"))


@pytest.mark.covers("extrapolation_experiment")
@pytest.mark.points(1)
@pytest.mark.contract("extrapolation_experiment")
@pytest.mark.covers("extrapolation_experiment:args/seed")
def test_experiment_result(experiment):
    """extrapolation_experiment returns the four accuracies, each in [0, 1] or None"""
    checks.expect_type(experiment, dict, "extrapolation_experiment()")
    if set(experiment) != KEYS:
        checks.fail(f"extrapolation_experiment(): expected the keys {sorted(KEYS)}, got {sorted(map(str, experiment))}")
    for key, value in sorted(experiment.items()):
        if value is None:
            continue
        if not isinstance(value, float) or not (0.0 <= value <= 1.0) or math.isnan(value):
            checks.fail(f"extrapolation_experiment()[{key!r}]: expected a float in [0, 1] or None, got {value!r}")


@pytest.mark.covers("extrapolation_experiment", "LearnedPositionalEmbedding:length")
@pytest.mark.points(1)
@pytest.mark.contract("extrapolation_experiment")
@pytest.mark.covers("extrapolation_experiment:structure")
def test_experiment_learned_cannot_extrapolate(experiment):
    """extrapolation_experiment: the learned table cannot run on 2n positions (None)"""
    checks.expect_type(experiment, dict, "extrapolation_experiment()")
    if experiment.get("learned_long", 0.0) is not None:
        checks.fail("extrapolation_experiment()['learned_long'] should be None: a learned table of "
                    "max_len = train_len has no vector for positions train_len … 2·train_len − 1, so "
                    "the model cannot run on the long test set",
                    "the learned model was built with a max_len larger than the training length, or the "
                    "positions are cut or wrapped instead of raising ValueError")
    for key in ("sinusoidal_long",):
        if experiment.get(key) is None:
            checks.fail(f"extrapolation_experiment()[{key!r}] is None: the sinusoidal table exists for "
                        "every position, so the model runs on the long test set")


@pytest.mark.covers("extrapolation_experiment")
@pytest.mark.points(1)
@pytest.mark.contract("extrapolation_experiment")
def test_experiment_learns_the_task(experiment):
    """extrapolation_experiment: both models learn the copy task at the training length"""
    checks.expect_type(experiment, dict, "extrapolation_experiment()")
    low = {k: experiment.get(k) for k in ("sinusoidal_train", "learned_train")
           if not isinstance(experiment.get(k), float) or not 0.9 <= experiment[k] <= 1.0}      # NaN/inf: low
    if low:
        shown = ", ".join(f"{k} = {v if not isinstance(v, float) else round(v, 3)}" for k, v in low.items())
        checks.fail(f"extrapolation_experiment(): with the defaults both models copy the token at "
                    f"`position` almost always at the training length (accuracy >= 0.9); got {shown}",
                    "the training or test sets differ from the docstring's (sizes, seeds, position), "
                    "the model is not trained with fit(…, steps), or the positions are not added")
