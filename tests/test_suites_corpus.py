"""The suites' proof: mutants lose points on the right test; alternative styles keep full marks.

Corpus layout (one case per file, named after what it does):

    tests/submissions/<exercise id>/mutants/<case>.diff      the bug, as a patch of the solution
    tests/submissions/<exercise id>/alternatives/<case>.py   a whole, differently written file

A mutant's first line is ``# expect-fail: <words>``: ``<words>`` is a substring of the name
of a test that must fail (several: separate with `|`, each must match a failing test). A
weakened suite that stops catching a mutant fails here. Format: ``tests/mutants.py``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from kit import ROOT, SUBMISSIONS, failed_titles, grade_folder, make_submission
from mutants import PatchError, apply_patch, as_submitted, expected_failures, make_patch, mutant_source


def _cases(kind: str, suffix: str) -> list:
    out = []
    for path in sorted(SUBMISSIONS.glob(f"ex*/{kind}/*{suffix}")):
        out.append(pytest.param(path, id=f"{path.parent.parent.name}-{path.stem}"))
    return out


def _grade_one(path: Path, source: str | Path, tmp_path: Path):
    ex = contract.BY_ID[path.parent.parent.name]
    folder = make_submission(tmp_path, {ex.filename: source})
    return ex, grade_folder(folder, ex.id)


@pytest.mark.parametrize("path", _cases("mutants", ".diff"))
def test_mutant_loses_points_on_the_named_test(path: Path, tmp_path: Path):
    expected = expected_failures(path)
    ex, results = _grade_one(path, mutant_source(path), tmp_path)
    failed = failed_titles(results)
    assert results.score < results.max_score, f"{path.name} kept full marks"
    for words in expected:
        assert any(words in name for name in failed), f"{path.name}: no failing test matches {words!r}; failed: {failed}"


@pytest.mark.parametrize("path", _cases("alternatives", ".py"))
def test_alternative_style_gets_full_marks(path: Path, tmp_path: Path):
    ex, results = _grade_one(path, path, tmp_path)
    assert results.score == results.max_score, {t.name: t.output[:300] for t in results.tests if not t.passed}


@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_corpus_covers_every_exercise(ex):
    mutants = sorted((SUBMISSIONS / ex.id / "mutants").glob("*.diff"))
    assert len(mutants) >= 10 and len(list((SUBMISSIONS / ex.id / "alternatives").glob("*.py"))) >= 2
    solution = as_submitted((ROOT / "solutions" / ex.folder / ex.filename).read_text())
    for path in mutants:                     # every patch still applies, and changes something
        assert mutant_source(path) != solution, path.name


def test_patches_find_their_place_by_content():
    base = "a\nx\nb\n\nc\nx\nd\n"
    patch = make_patch(base, "a\nx\nb\n\nc\ny\nd\n", ["# expect-fail: t"], context=1)
    assert apply_patch(base, patch) == "a\nx\nb\n\nc\ny\nd\n"
    shifted = "new\nnew\n" + base                       # the solution grew above the hunk
    assert apply_patch(shifted, patch) == "new\nnew\na\nx\nb\n\nc\ny\nd\n"
    with pytest.raises(PatchError, match="refresh the mutant"):
        apply_patch(base.replace("c\n", "C\n"), patch)


def test_a_wrong_return_type_is_explained_not_an_internal_error(tmp_path: Path):
    """A function that returns one array where the contract says a pair: every failing test
    says what came back, none falls through to the grader's internal-error message."""
    path = SUBMISSIONS / "ex1" / "mutants" / "np_returns_output_only.diff"
    _, results = _grade_one(path, mutant_source(path), tmp_path)
    failed = [t for t in results.tests if not t.passed]
    assert failed
    for t in failed:
        assert "could not finish this test" not in t.output, (t.name, t.output)
    assert any("expected a tuple of 2 values, got ndarray" in t.output for t in failed)
