"""The contract corpus: correct sets written by people who never saw the kit, and the verdict
each must get (full marks on every exercise it is graded on).

    tests/contract_corpus/contract_a/, contract_b/      written from EXERCISES.md alone
    tests/contract_corpus/nanogpt/, annotated/,         written in the idioms of nanoGPT, the
                          tutorial/, cs231n/            Annotated Transformer, the PyTorch
                                                        tutorials and CS231n
    (README.canonical.md, FREEDOMS.contract_a.md: the freedoms each one took)

Used by ``tests/test_contract_corpus.py`` and ``bench/seed_sweep.py --kinds contract``.
"""
from __future__ import annotations

from pathlib import Path

from autograder import contract

CORPUS = Path(__file__).resolve().parent / "contract_corpus"
EVERY = ",".join(ex.id for ex in contract.EXERCISES)


def sets() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


def problem_of(folder: Path, results) -> str:
    """"" when a set kept full marks on every exercise it was graded on; else what it lost,
    test by test (a 0-point note may fail: it is feedback, not a deduction)."""
    lost = [(t.name, t.output[:300]) for t in results.tests if t.score < t.max_score]
    if not lost and results.score == results.max_score:
        return ""
    return f"{folder.name}, a correct set, scored {results.score:g} / {results.max_score:g}: {lost}"
