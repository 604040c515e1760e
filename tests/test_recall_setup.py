"""ex5's recall test judges the student's model over candidate set-ups (autograder/suites/ex5_lstm_comparison/recall.py).

``recall.judge`` is checked with made-up accuracies (which candidates are trained, for whom, and
where the model is judged), against the rule it replaces: search the first candidate the
reference solves, then judge the student's model there. ``recall.reference_accuracy`` is checked
against the reference built and trained the obvious way, with the suite's seeds.
"""
from __future__ import annotations

import hashlib
import itertools
import math

import pytest
import torch

from autograder import seeds
from autograder.suites.ex5_lstm_comparison import common, recall
from autograder.support.training import kit_train

RECALL = "autograder/suites/ex5_lstm_comparison/test_training.py::test_attention_learns_recall"
OFFSETS = recall.OFFSETS


class Trainings:
    """Made-up held-out accuracies per candidate, and the calls made for them."""

    def __init__(self, accuracies: dict[int, float]):
        self.accuracies, self.calls = accuracies, []

    def __call__(self, offset: int) -> float:
        self.calls.append(offset)
        return self.accuracies[offset]


def test_a_model_that_learns_passes_at_the_first_candidate_and_the_reference_is_not_trained():
    student, reference = Trainings({o: 1.0 for o in OFFSETS}), Trainings({o: 1.0 for o in OFFSETS})
    verdict = recall.judge(student, reference)
    assert verdict == recall.Verdict(OFFSETS[0], 1.0, recall.E2E_MIN) and verdict.passed
    assert student.calls == [OFFSETS[0]] and reference.calls == []


def test_a_model_that_fails_where_the_reference_solves_the_first_candidate_is_trained_once():
    student, reference = Trainings({o: 0.4 for o in OFFSETS}), Trainings({o: 1.0 for o in OFFSETS})
    verdict = recall.judge(student, reference)
    assert verdict == recall.Verdict(OFFSETS[0], 0.4, recall.E2E_MIN) and not verdict.passed
    assert student.calls == reference.calls == [OFFSETS[0]]


def test_a_model_that_does_not_learn_is_judged_on_the_first_candidate_the_reference_solves():
    student = Trainings({o: 0.4 for o in OFFSETS})
    reference = Trainings({OFFSETS[0]: 0.7, OFFSETS[1]: 0.93, OFFSETS[2]: 0.93, OFFSETS[3]: 0.97,
                           **{o: 1.0 for o in OFFSETS[4:]}})
    verdict = recall.judge(student, reference)
    assert verdict == recall.Verdict(OFFSETS[3], 0.4, recall.E2E_MIN) and not verdict.passed
    assert student.calls == [*OFFSETS[:recall.EARLY], OFFSETS[3]]       # the search trains the reference only
    assert reference.calls == list(OFFSETS[:4])


def test_a_model_that_fails_where_the_reference_solves_the_second_candidate():
    student = Trainings({o: 0.4 for o in OFFSETS})
    reference = Trainings({OFFSETS[0]: 0.7, **{o: 1.0 for o in OFFSETS[1:]}})
    verdict = recall.judge(student, reference)
    assert verdict == recall.Verdict(OFFSETS[1], 0.4, recall.E2E_MIN) and not verdict.passed
    assert student.calls == reference.calls == list(OFFSETS[:2])


def test_a_candidate_the_reference_does_not_solve_never_costs_the_student():
    student = Trainings({OFFSETS[0]: 0.6, OFFSETS[1]: 0.91, **{o: 0.0 for o in OFFSETS[2:]}})
    reference = Trainings({OFFSETS[0]: 0.62, OFFSETS[1]: 0.9, **{o: 1.0 for o in OFFSETS[2:]}})
    verdict = recall.judge(student, reference)
    assert verdict == recall.Verdict(OFFSETS[1], 0.91, recall.E2E_MIN) and verdict.passed
    assert student.calls == list(OFFSETS[:2]) and reference.calls == [OFFSETS[0]]


@pytest.mark.parametrize("best", [3, 1])
@pytest.mark.parametrize("student_there, passes", [(0.83, True), (0.81, False)])
def test_when_the_reference_solves_none_the_bar_sits_under_its_best(best, student_there, passes):
    reference = {o: 0.5 for o in OFFSETS} | {OFFSETS[best]: 0.87, OFFSETS[5]: 0.87}    # the first best counts
    student = {o: 0.3 for o in OFFSETS} | {OFFSETS[best]: student_there, OFFSETS[5]: 0.0}
    trained, references = Trainings(student), Trainings(reference)
    verdict = recall.judge(trained, references)
    assert verdict.offset == OFFSETS[best] and verdict.passed is passes
    assert math.isclose(verdict.needed, 0.87 - recall.BEST_MARGIN)
    assert trained.calls == list(dict.fromkeys((*OFFSETS[:recall.EARLY], OFFSETS[best])))  # never twice on one
    assert references.calls == list(OFFSETS)


def test_a_nan_accuracy_fails():
    verdict = recall.judge(Trainings({o: math.nan for o in OFFSETS}), Trainings({o: 1.0 for o in OFFSETS}))
    assert not verdict.passed and verdict.offset == OFFSETS[0]


def test_every_model_the_search_first_rule_passed_still_passes():
    """Over a grid of made-up accuracies on three candidates: where searching first passed the
    model, ``judge`` passes it too (it can only pass more: on an earlier candidate), and it
    trains the student's model at most ``EARLY + 1`` times, never twice on one candidate."""
    offsets = OFFSETS[:3]
    levels = (0.5, 0.85, 0.88, 0.92, 0.96)
    for ref_accs, stu_accs in itertools.product(itertools.product(levels, repeat=3), repeat=2):
        reference, student = dict(zip(offsets, ref_accs)), dict(zip(offsets, stu_accs))
        old = _search_then_judge(offsets, student, reference)
        trained = Trainings(student)
        new = recall.judge(trained, Trainings(reference), offsets).passed
        assert new or not old, (reference, student)
        assert len(trained.calls) == len(set(trained.calls)) <= recall.EARLY + 1


def _search_then_judge(offsets, student: dict[int, float], reference: dict[int, float]) -> bool:
    """The rule ``judge`` replaced: the first candidate the reference solves (else its best, with
    the bar 5 points under it), then the student's model judged there."""
    solved = [o for o in offsets if reference[o] >= recall.E2E_SOLVED]
    offset = solved[0] if solved else max(offsets, key=lambda o: reference[o])
    return student[offset] >= min(recall.E2E_MIN, reference[offset] - recall.BEST_MARGIN)


def _plain_reference_accuracy(offset: int) -> float:
    """The reference trained the obvious way, for the current test's seeds."""
    model = common.reference_model("attention", offset, **recall.E2E)
    tokens, labels = common.dataset(recall.E2E_TRAIN, 32, recall.E2E["vocab"], offset + 1)
    test_tokens, test_labels = common.dataset(recall.E2E_TEST, 32, recall.E2E["vocab"], offset + 2)
    kit_train(model, tokens, labels, recall.E2E_STEPS, recall.E2E_LR, common.seed(0))
    with torch.no_grad():
        return float((model(test_tokens).argmax(-1) == test_labels).double().mean())


def test_the_reference_is_trained_as_the_suite_seeds_it_and_leaves_the_global_generator_alone():
    # under secret 14 the reference fails the first candidate (0.23 here) and solves the second (1.0)
    run = seeds.Seeds(hashlib.sha256(b"14").digest(), {"ex5": b"ex5 source"})
    seeds.enter(run, "ex5", RECALL)
    try:
        accuracies = []
        for offset in OFFSETS[:2]:
            torch.manual_seed(1234)
            got = recall.reference_accuracy(offset)
            drawn_after = torch.rand(4)
            torch.manual_seed(1234)
            assert torch.equal(drawn_after, torch.rand(4)), "the global generator moved"
            assert got == _plain_reference_accuracy(offset)
            accuracies.append(got)
    finally:
        seeds.leave()
    assert accuracies[0] < recall.E2E_SOLVED <= accuracies[1]     # both outcomes were seen
