"""The blind student corpus: which submissions it holds and what verdict each must get.

    tests/student_corpus/correct/<style>/   five complete, correct files in one honest style
    tests/student_corpus/bugs/<case>/       the five files with ONE bug, and BUG.txt whose first
                                            line is "<exercise> <function> : <what is wrong>"

Correct styles keep full marks on every exercise; every bug loses points on a test of its
exercise that is about the function holding it (:func:`problem_of`). Used by
``tests/test_student_corpus.py`` and ``bench/seed_sweep.py --kinds student``.
"""
from __future__ import annotations

import re
from pathlib import Path

from suite_covers import covers_by_result_name

CORPUS = Path(__file__).resolve().parent / "student_corpus"
DEFAULT = "ex1,ex2,ex3,ex4,ex5"


def folders(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).iterdir() if p.is_dir())


def bug_of(folder: Path) -> tuple[str, str, str]:
    """(exercise, function, description) from BUG.txt."""
    line = (folder / "BUG.txt").read_text(encoding="utf-8").strip().splitlines()[0]
    head, _, description = line.partition(" : ")
    exercise, function = head.split(maxsplit=1)
    return exercise, function.strip(), description.strip()


def exercises_of(folder: Path) -> str:
    """The exercises a corpus submission is graded on: all five for a correct style, the
    bug's own for a bug."""
    return DEFAULT if folder.parent.name == "correct" else bug_of(folder)[0]


def _names(function: str) -> set[str]:
    """``MultiHeadAttention.forward`` -> {"MultiHeadAttention.forward", "MultiHeadAttention", "forward"}."""
    parts = function.split(".")
    return {function, *parts}


def problem_of(folder: Path, results) -> str:
    """What is wrong with how a corpus submission was graded; "" when its verdict holds
    (tests/test_student_corpus.py, ``bench/seed_sweep.py --kinds student``)."""
    failed = [t for t in results.tests if not t.passed]
    if folder.parent.name == "correct":
        if results.score == results.max_score == 100:
            return ""
        return f"{folder.name}, a correct style, lost points: {[(t.name, t.output[:300]) for t in failed]}"
    exercise, function, description = bug_of(folder)
    if not failed:
        return f"{folder.name} ({description}) kept full marks: a missing hidden test"
    covers = covers_by_result_name()
    names = _names(function)
    about = [t.name for t in failed
             if names & {c.split(":")[0] for c in covers.get(t.name, set())}
             or any(re.search(rf"\b{re.escape(n)}\b", t.name) for n in names)]
    if not about:
        return f"{folder.name}: the bug is in {function} but no failing test is about it: {[t.name for t in failed]}"
    return ""
