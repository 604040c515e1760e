"""The set-ups of ex5's end-to-end recall test (``test_training.test_attention_learns_recall``).

The kit's own Adam loop trains the student's AttentionClassifier, from the reference's initial
weights, on a length-32 recall task. Whether 60 steps are enough depends on those weights and on
the data: the reference reaches ``E2E_SOLVED`` held-out accuracy on most set-ups, not all (the
first candidate under 120 random secrets and sources: 94 times, ``bench/recall_trainings.py``). So there are candidate set-ups,
tried in a fixed order and all drawn from the test's own seeds, and :func:`judge` decides:

* the student's model is trained on the first candidate; ``E2E_MIN`` held-out accuracy passes;
* otherwise the grader trains the reference on it: a set-up the reference solves is one a
  correct model learns, so the student's model fails there; a set-up it does not solve was too
  hard for anyone, and the next candidate is tried the same way, up to ``EARLY`` of them;
* after those, the grader searches on, training the reference only, for the first set-up it
  solves, and the student's model is judged there (a third training);
* when the reference solves none, the student's model is judged on the candidate the reference
  did best on, against a bar 5 points under the reference's accuracy there.

So a set-up the reference does not solve never costs a student anything, a model that learns
usually costs one training and no reference at all, and the student's model is trained at most
``EARLY + 1`` times. (The grader used to search first, on a thread, at every grading, and judge
the student's model on the first solved set-up only: that cost 1.3 trainings of the reference
per ex5 grading on average, for nothing when the model learns. Every model that passed that
way passes this way: :func:`judge` reaches that set-up with the same bar, unless the model
passed on an earlier one.)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch

from autograder.support.training import kit_train
from autograder.suites.ex5_lstm_comparison import common

E2E = dict(vocab=8, d_model=16, classes=8, max_len=32)
E2E_TRAIN, E2E_TEST, E2E_STEPS, E2E_LR, E2E_MIN = 256, 256, 60, 0.05, 0.9
E2E_SOLVED, E2E_CANDIDATES = 0.95, 8
SEQ = 32
BEST_MARGIN = 0.05                   # the bar on the reference's best candidate, when it solves none
EARLY = 2                            # candidates the student's model is tried on before the search


def offset_of(attempt: int) -> int:
    """The seed offset of candidate ``attempt``: the reference's initial weights; the training
    set uses ``offset + 1``, the held-out set ``offset + 2``."""
    return 130 + 1000 * attempt


OFFSETS = tuple(offset_of(attempt) for attempt in range(E2E_CANDIDATES))


def training_set(offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Candidate ``offset``'s training set: tokens (256, 32) int64, labels (256,) int64."""
    return common.dataset(E2E_TRAIN, SEQ, E2E["vocab"], offset + 1)


def held_out_set(offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Candidate ``offset``'s held-out set: tokens (256, 32) int64, labels (256,) int64."""
    return common.dataset(E2E_TEST, SEQ, E2E["vocab"], offset + 2)


def accuracy(model: torch.nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(tokens).argmax(-1) == labels).double().mean())


def reference_accuracy(offset: int) -> float:
    """The reference's held-out accuracy on candidate ``offset`` of the current test, trained by
    the kit's loop as the student's model is. The reference draws no random numbers while it
    trains (no dropout, full batches), and torch's global generator is left as it was."""
    with torch.random.fork_rng(devices=[]):
        model = common.reference_model("attention", offset, **E2E)
        kit_train(model, *training_set(offset), E2E_STEPS, E2E_LR, seed=None)
        return accuracy(model, *held_out_set(offset))


@dataclass(frozen=True)
class Verdict:
    """Where the student's model was judged: candidate ``offset``, its held-out accuracy
    ``accuracy`` against the bar ``needed``."""
    offset: int
    accuracy: float
    needed: float

    @property
    def passed(self) -> bool:
        return self.accuracy >= self.needed          # a NaN accuracy fails


def search(reference: Callable[[int], float], offsets: tuple[int, ...] = OFFSETS) -> tuple[int, float]:
    """(the candidate to judge on, the bar there): the first of ``offsets`` that
    ``reference(offset)`` (the reference's held-out accuracy) solves, with ``E2E_MIN``; when none
    is, the one it did best on (the first of equals), with a bar ``BEST_MARGIN`` under that."""
    tried: list[tuple[float, int]] = []
    for offset in offsets:
        solved = reference(offset)
        if solved >= E2E_SOLVED:
            return offset, E2E_MIN
        tried.append((solved, offset))
    best, offset = max(tried, key=lambda t: t[0])
    return offset, min(E2E_MIN, best - BEST_MARGIN)


def judge(student: Callable[[int], float], reference: Callable[[int], float],
          offsets: tuple[int, ...] = OFFSETS) -> Verdict:
    """Judge the student's model (module docstring). ``student(offset)`` trains a fresh copy of
    it on that candidate and returns its held-out accuracy (errors propagate: a crash or a
    timeout is never retried); ``reference(offset)`` does the same for the reference. Each is
    called at most once per candidate, and ``reference`` only after the student's model did
    not pass."""
    trained: dict[int, float] = {}                   # the student's accuracy per candidate
    solved = functools.cache(reference)
    for offset in offsets[:EARLY]:
        trained[offset] = got = student(offset)
        if got >= E2E_MIN or solved(offset) >= E2E_SOLVED:
            return Verdict(offset, got, E2E_MIN)
    offset, needed = search(solved, offsets)
    got = trained[offset] if offset in trained else student(offset)
    return Verdict(offset, got, needed)
