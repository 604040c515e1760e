"""How many trainings ex5's recall test costs per grading of a correct model: searching first
(the rule before ``recall.judge``) against ``recall.judge``.

    .venv/bin/python bench/recall_trainings.py [--pairs 40] [--seed 0]

For ``--pairs`` (secret, source digest) pairs drawn at random from ``--seed``, it trains the
reference on the candidate set-ups of ``test_attention_learns_recall``
(``autograder/suites/ex5_lstm_comparison/recall.py``), each candidate once and only as far as
needed, and counts the trainings each rule makes for a correct model. A correct model's held-out
accuracy is taken to be the reference's: it starts from the same weights and gets the same data
and the same loop.

* search first: the reference on candidate after candidate until one is solved, then the
  student's model there;
* ``recall.judge``: the student's model first, the reference only where it did not pass.

It prints the mean number of trainings per grading under each rule, how often the first candidate
was solved, and the median CPU of one training (one torch thread, this process).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import seeds  # noqa: E402
from autograder.suites.ex5_lstm_comparison import recall  # noqa: E402

RECALL = "autograder/suites/ex5_lstm_comparison/test_training.py::test_attention_learns_recall"


def counting(accuracy: Callable[[int], float]) -> tuple[Callable[[int], float], list[int]]:
    """``accuracy`` wrapped to record each call's candidate, and the list it records into."""
    calls: list[int] = []

    def counted(offset: int) -> float:
        calls.append(offset)
        return accuracy(offset)

    return counted, calls


def search_first(accuracy: Callable[[int], float]) -> int:
    """Trainings under the rule before ``judge``: the reference's in ``recall.search``, then the
    student's model once, on the candidate it picked."""
    reference, calls = counting(accuracy)
    recall.search(reference)
    return len(calls) + 1


def judged(accuracy: Callable[[int], float]) -> int:
    """Trainings under ``recall.judge``, the student's model and the reference counted alike."""
    model, calls = counting(accuracy)
    recall.judge(model, model)
    return len(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    draw = random.Random(args.seed)
    before, now, first_solved, cpu = [], [], 0, []
    try:
        for _ in range(args.pairs):
            seeds.enter(seeds.Seeds(draw.randbytes(32), {"ex5": draw.randbytes(32)}), "ex5", RECALL)
            known: dict[int, float] = {}

            def accuracy(offset: int) -> float:
                if offset not in known:
                    start = time.process_time()
                    known[offset] = recall.reference_accuracy(offset)
                    cpu.append(time.process_time() - start)
                return known[offset]

            before.append(search_first(accuracy))
            now.append(judged(accuracy))
            first_solved += accuracy(recall.OFFSETS[0]) >= recall.E2E_SOLVED
    finally:
        seeds.leave()
    print(f"{args.pairs} pairs: the first candidate solved {first_solved} times")
    print(f"trainings per grading of a correct model: search first {statistics.mean(before):.2f}, "
          f"judge {statistics.mean(now):.2f}")
    print(f"one training: {statistics.median(cpu):.2f} s of CPU (median of {len(cpu)})")


if __name__ == "__main__":
    main()
