"""The set-up of ex5's end-to-end recall test (``test_training.test_attention_learns_recall``).

The kit's own Adam loop trains the student's AttentionClassifier (from the reference's
initial weights) on a length-32 recall task. Whether 60 steps are enough depends on the
initial weights and the data (the reference reaches >= 95% held-out accuracy for about two
seeds in three), so the grader first trains the REFERENCE on candidate set-ups drawn from the
test's seeds and keeps the first it solves: the student's model then gets exactly that set-up.

That search is the grader's own work, the same for every submission and independent of it,
and it takes a third of a second per candidate. :class:`InBackground` does it on a thread of
the grader from ex5's first hidden test on (``conftest.py``), while the worker runs the student's
code for the tests before this one, so the recall test finds it done. The thread never
touches torch's global generator (the candidates' weights and data are made on the calling
thread, under :func:`torch.random.fork_rng`, and the reference's training needs no random
numbers), so the other tests' inputs are what they would be without it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import torch

import reference.lstm_vs_attention as ref
from autograder.support.training import kit_train
from autograder.suites.ex5_lstm_comparison import common

TEST_NAME = "test_attention_learns_recall"

E2E = dict(vocab=8, d_model=16, classes=8, max_len=32)
E2E_TRAIN, E2E_TEST, E2E_STEPS, E2E_LR, E2E_MIN = 256, 256, 60, 0.05, 0.9
E2E_SOLVED, E2E_CANDIDATES = 0.95, 8
SEQ = 32


def offset_of(attempt: int) -> int:
    """The seed offset of candidate ``attempt``; the training set uses ``offset + 1``, the
    held-out set ``offset + 2``."""
    return 130 + 1000 * attempt


@dataclass(frozen=True)
class Candidate:
    """One set-up: the reference with its seeded initial weights, the training and held-out sets."""
    offset: int
    reference: torch.nn.Module
    train: tuple[torch.Tensor, torch.Tensor]        # tokens (256, 32) int64, labels (256,) int64
    test: tuple[torch.Tensor, torch.Tensor]


def candidates(name: str | None = None) -> list[Candidate]:
    """Every candidate set-up from the seeds of test ``name`` (a node id; None: the current
    test), made on this thread; torch's global generator is left as it was."""
    out = []
    with torch.random.fork_rng(devices=[]):
        for attempt in range(E2E_CANDIDATES):
            offset = offset_of(attempt)
            out.append(Candidate(offset, common.reference_model("attention", offset, **E2E, name=name),
                                 common.dataset(E2E_TRAIN, SEQ, E2E["vocab"], offset + 1, name=name),
                                 common.dataset(E2E_TEST, SEQ, E2E["vocab"], offset + 2, name=name)))
    return out


def accuracy(model: torch.nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(tokens).argmax(-1) == labels).double().mean())


def solve(found: list[Candidate], stop: Callable[[], bool] = lambda: False) -> tuple[int, float]:
    """(seed offset of the set-up, the reference's held-out accuracy on it): the first
    candidate the reference solves, else the best one. The reference trains deterministically
    (no dropout, full batches), so no generator is seeded."""
    best = (found[0].offset, -1.0)
    for candidate in found:
        if stop():
            break
        kit_train(candidate.reference, *candidate.train, E2E_STEPS, E2E_LR, seed=None)
        acc = accuracy(candidate.reference, *candidate.test)
        if acc >= E2E_SOLVED:
            return candidate.offset, acc
        best = max(best, (candidate.offset, acc), key=lambda b: b[1])
    return best


class InBackground:
    """:func:`solve` for test ``name``'s candidates, on a thread started now; :meth:`result`
    waits for it. :meth:`close` stops it after the candidate it is training (for a grading
    that ends before the recall test runs)."""

    def __init__(self, name: str):
        self._found = candidates(name)
        self._stop = threading.Event()
        self._result: tuple[int, float] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ex5-recall-setup", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = solve(self._found, self._stop.is_set)
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), on the test's thread
            self._error = exc

    def result(self) -> tuple[int, float]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
