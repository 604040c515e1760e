"""The isolation promise, tested with hostile submissions graded through the real CLI.

Every case of the hostile corpus (``tests/hostile/``; its cases, templating and
expectations: ``tests/hostile_cases.py``) is graded by ``python -m autograder grade`` in a
subprocess, exactly as on Gradescope, and must show what ``hostile_cases.check_run`` asks of
every run; cases that attack the kit also leave it byte for byte unchanged.
"""
from __future__ import annotations

import pytest

from hostile_cases import CASES, CORPUS, IS_ROOT, Corpus, Grading, grade_and_check

GRADING = Grading()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    return Corpus(GRADING, tmp_path_factory)


def _params():
    out = []
    for name, spec in CASES.items():
        marks = [pytest.mark.skipif(not IS_ROOT, reason="needs root: the worker must run as the "
                                    f"unprivileged user {GRADING.user!r} (as on Gradescope)")] if spec.root else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_corpus_is_declared():
    on_disk = {p.name for p in CORPUS.iterdir() if p.is_dir()}
    assert on_disk == set(CASES), f"undeclared: {on_disk - set(CASES)}; missing: {set(CASES) - on_disk}"


@pytest.mark.parametrize("case", _params())
def test_hostile_submission(case: str, corpus: Corpus, tmp_path_factory):
    grade_and_check(case, corpus, tmp_path_factory)
