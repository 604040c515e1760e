"""The suites' proof: mutants lose points on the right test; alternative styles keep full marks.

Corpus layout (one student file per case, named after what it does):

    tests/submissions/<exercise id>/mutants/<case>.py        first line:  # expect-fail: <words>
    tests/submissions/<exercise id>/alternatives/<case>.py

``<words>`` is a substring of the name of a test that must fail (several: separate with `|`,
each must match a failing test). A weakened suite that stops catching a mutant fails here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from kit import SUBMISSIONS, failed_titles, grade_folder, make_submission


def _cases(kind: str) -> list:
    out = []
    for path in sorted(SUBMISSIONS.glob(f"ex*/{kind}/*.py")):
        out.append(pytest.param(path, id=f"{path.parent.parent.name}-{path.stem}"))
    return out


def _grade_one(path: Path, tmp_path: Path):
    ex = contract.BY_ID[path.parent.parent.name]
    folder = make_submission(tmp_path, {ex.filename: path})
    return ex, grade_folder(folder, ex.id)


@pytest.mark.parametrize("path", _cases("mutants"))
def test_mutant_loses_points_on_the_named_test(path: Path, tmp_path: Path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect-fail:"), f"{path.name}: first line must be '# expect-fail: <words>'"
    expected = [w.strip() for w in first.removeprefix("# expect-fail:").split("|") if w.strip()]
    ex, results = _grade_one(path, tmp_path)
    failed = failed_titles(results)
    assert results.score < results.max_score, f"{path.name} kept full marks"
    for words in expected:
        assert any(words in name for name in failed), f"{path.name}: no failing test matches {words!r}; failed: {failed}"


@pytest.mark.parametrize("path", _cases("alternatives"))
def test_alternative_style_gets_full_marks(path: Path, tmp_path: Path):
    ex, results = _grade_one(path, tmp_path)
    assert results.score == results.max_score, {t.name: t.output[:300] for t in results.tests if not t.passed}
