"""Hostile corpus, generated: submissions that return NaN (or inf) of the right shapes everywhere.

Such a file implements nothing, yet every value it returns has the contract's shape (and,
for torch, is even connected to autograd; modules have the spec's submodules and load
weights). Observed before these checks: a multihead.py like this scored 2.75/20 (a ``>``
comparison is False for NaN, a shape test took NaN, the rules test only built the module).
Every exercise must give it 0: value checks reject NaN/inf, shape and "runs" tests require
finite values, structure and rules tests require that loaded weights are used. Each
exercise's file (the part after ``PRELUDE``) is ``tests/submissions/<id>/nonfinite.py.tmpl``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from helpers import ROOT, grade_folder, make_submission

PRELUDE = '''import math
import numpy as np
import torch
from torch import nn

FILL = float("{value}")


def _like(t, shape):
    """A tensor of FILL with ``shape``, connected to ``t`` by autograd (when t needs grad)."""
    return t.new_full(tuple(shape), FILL) + 0 * t.sum()
'''

# Each exercise's body (after PRELUDE) is in its corpus folder: tests/submissions/<id>/nonfinite.py.tmpl
BODY = "nonfinite.py.tmpl"


def nonfinite_source(exercise_id: str, value: str) -> str:
    """The exercise's file that returns ``value`` ("nan" or "inf") of the right shapes everywhere."""
    body = contract.BY_ID[exercise_id].corpus_folder(ROOT) / BODY
    return PRELUDE.format(value=value) + "\n\n" + body.read_text(encoding="utf-8")


@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_nonfinite_submission_scores_zero(ex: contract.Exercise, value: str, tmp_path: Path):
    folder = make_submission(tmp_path, {ex.filename: nonfinite_source(ex.id, value)})
    results = grade_folder(folder, ex.id)
    passed = {t.name: t.output for t in results.tests if t.passed}
    assert results.tests and results.score == 0, f"{ex.id} filled with {value} passed {sorted(passed)}"
    for t in results.tests:
        assert "could not finish this test" not in t.output, (t.name, t.output)


@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_every_exercise_has_its_nonfinite_file(ex: contract.Exercise):
    source = nonfinite_source(ex.id, "nan")
    compile(source, ex.filename, "exec")
    assert "TODO" not in source, f"{ex.corpus_folder(ROOT) / BODY} is still the scaffold's skeleton"
