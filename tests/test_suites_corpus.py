"""The suites' proof: mutants lose points on the right test; alternative styles keep full marks.

Corpus layout (one case per file, named after what it does):

    tests/submissions/<exercise id>/mutants/<case>.diff      the bug, as a patch of the solution
    tests/submissions/<exercise id>/alternatives/<case>.py   a whole, differently written file
    (``Exercise.corpus_folder``: the registry finds each exercise's; they stay with the kit's
    tests, never inside the exercise's suite folder, which the Gradescope zip and the wheel ship)

A mutant's first line is ``# expect-fail: <words>``: ``<words>`` is a substring of the name
of a test that must fail (several: separate with `|`, each must match a failing test). A
weakened suite that stops catching a mutant fails here. Format: ``tests/mutants.py``.

Feedback: every test a mutant fails must be about something it breaks (its ``covers``, see
``tests/suite_covers.py``); a hint is right or absent: no failing test names a cause outside
the mutant's label (``# cause-id:``), and at least RIGHT_SHARE of the mutants get a right one
(``tests/hints.py``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from helpers import ROOT, SUBMISSIONS, failed_titles
from mutants import PatchError, apply_patch, as_submitted, expected_failures, make_patch, mutant_source
from hints import Verdict, mutant_labels, verdict, wrong_ones
from suite_covers import covers_by_result_name, covers_of, justified, mutant_breaks, records

RIGHT_SHARE = 0.90                  # at least this share of mutants get the right likely cause


def _cases(kind: str, suffix: str) -> list:
    """Every exercise's ``kind`` cases, found through the registry (``Exercise.corpus_folder``)."""
    out = []
    for ex in contract.EXERCISES:
        for path in sorted((ex.corpus_folder(ROOT) / kind).glob(f"*{suffix}")):
            out.append(pytest.param(path, id=f"{ex.id}-{path.stem}"))
    return out


@pytest.fixture
def graded(gradings):
    """``graded(path)``: a mutant's (``.diff``) or an alternative's (``.py``) results, graded
    once per run (gradings.py): several tests read each."""
    def grade(path: Path):
        ex = contract.BY_ID[path.parent.parent.name]
        source = mutant_source(path) if path.suffix == ".diff" else path.read_text()
        return gradings.grade({ex.filename: source}, ex.id)
    return grade


def _solution(path: Path) -> str:
    ex = contract.BY_ID[path.parent.parent.name]
    return as_submitted((ROOT / "solutions" / ex.folder / ex.filename).read_text())


@pytest.mark.parametrize("path", _cases("mutants", ".diff"))
def test_mutant_loses_points_on_the_named_test(path: Path, graded):
    expected = expected_failures(path)
    results = graded(path)
    failed = failed_titles(results)
    assert results.score < results.max_score, f"{path.name} kept full marks"
    for words in expected:
        assert any(words in name for name in failed), f"{path.name}: no failing test matches {words!r}; failed: {failed}"


@pytest.mark.parametrize("path", _cases("mutants", ".diff"))
def test_mutant_fails_only_tests_about_what_it_breaks(path: Path, graded):
    """A failing test's title (its ``covers``) names something the mutant breaks:
    its changed functions, the solution's functions that use them, or a declared
    ``# breaks: name:property`` (in-place changes, the device argument, banned APIs)."""
    breaks = mutant_breaks(_solution(path), mutant_source(path), path.read_text())
    covers = covers_by_result_name()
    blamed = {t.name: sorted(covers.get(t.name, set())) for t in graded(path).tests
              if not t.passed and not justified(covers.get(t.name, set()), breaks)}
    assert not blamed, f"{path.name} breaks {sorted(breaks)} but fails tests about other things: {blamed}"


@pytest.mark.parametrize("path", _cases("mutants", ".diff"))
def test_mutant_gets_no_wrong_hint(path: Path, graded):
    """A hint is right or absent: every likely cause a failing test names (one, or several the
    test cannot tell apart) includes a cause of the mutant's label (``# cause-id:``); a hint
    naming another mistake sends the student the wrong way."""
    label = mutant_labels([path])[path]
    named = [list(t.cause) for t in graded(path).tests if not t.passed]
    wrong = wrong_ones(label, named)
    assert not wrong, f"{path.name}: label {sorted(label.causes)}, but tests named {wrong}"


def test_most_mutants_get_the_right_hint(graded):
    """At least RIGHT_SHARE of the mutants get a right likely cause (bench/hint_measure.py
    prints the table, right / none / wrong per mutant)."""
    paths = [p.values[0] for p in _cases("mutants", ".diff")]
    labels = mutant_labels(paths)
    verdicts = {f"{p.parent.parent.name}/{p.stem}": verdict(labels[p], [list(t.cause) for t in graded(p).tests
                                                                       if not t.passed])
                for p in paths}
    right = [n for n, v in verdicts.items() if v is Verdict.RIGHT]
    share = len(right) / len(paths)
    print(f"\nright likely cause: {len(right)} of {len(paths)} mutants ({share:.0%}); others: "
          + ", ".join(f"{n} ({v.value})" for n, v in verdicts.items() if v is not Verdict.RIGHT))
    assert share >= RIGHT_SHARE, {n: v.value for n, v in verdicts.items() if v is not Verdict.RIGHT}


def test_every_suite_test_says_what_it_covers():
    """Each test covers contract names or ``name:property`` (from its covers marker, else its
    title), so the blame check above has something to check."""
    for record in records():
        names = contract.BY_ID[record.exercise].names
        cov = covers_of(record)
        assert cov, f"{record.nodeid}: add @pytest.mark.covers(...) or name the function in the title"
        for name in cov:
            assert name == "rules" or name.split(":")[0].split(".")[0] in names, \
                f"{record.nodeid}: unknown covers name {name!r}"


def _given_names(path: Path) -> set[str]:
    """Top-level functions and classes the solution gives complete (no solution region inside):
    helpers students use but do not write (ex6's CopyModel, fit)."""
    import ast
    ex = contract.BY_ID[path.parent.parent.name]
    source = (ROOT / "solutions" / ex.folder / ex.filename).read_text()
    return {node.name for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
            and "### BEGIN SOLUTION" not in (ast.get_source_segment(source, node) or "")}


@pytest.mark.parametrize("path", _cases("mutants", ".diff"))
def test_mutant_breaks_are_known_names(path: Path):
    names = set(contract.BY_ID[path.parent.parent.name].names) | _given_names(path)
    breaks = mutant_breaks(_solution(path), mutant_source(path), path.read_text())
    assert breaks, path.name
    for name in breaks:
        assert name == "rules" or name.split(":")[0].split(".")[0] in names or name.startswith("_"), \
            f"{path.name}: unknown name {name!r} in what it breaks"


@pytest.mark.parametrize("path", _cases("alternatives", ".py"))
def test_alternative_style_gets_full_marks(path: Path, graded):
    results = graded(path)
    assert results.score == results.max_score, {t.name: t.output[:300] for t in results.tests if not t.passed}


@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_corpus_covers_every_exercise(ex):
    mutants = sorted((ex.corpus_folder(ROOT) / "mutants").glob("*.diff"))
    assert len(mutants) >= 10 and len(list((ex.corpus_folder(ROOT) / "alternatives").glob("*.py"))) >= 2
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


def test_a_wrong_return_type_is_explained_not_an_internal_error(graded):
    """A function that returns one array where the contract says a pair: every failing test
    says what came back, none falls through to the grader's internal-error message."""
    results = graded(SUBMISSIONS / "ex1" / "mutants" / "np_returns_output_only.diff")
    failed = [t for t in results.tests if not t.passed]
    assert failed
    for t in failed:
        assert "could not finish this test" not in t.output, (t.name, t.output)
    assert any("expected a tuple of 2 values, got ndarray" in t.output for t in failed)


def test_only_public_tests_reveal_expected_values():
    """Public failure messages may show expected values (``reveal=True``); hidden
    tests never do."""
    suites = ROOT / "autograder" / "suites"
    for path in sorted(suites.rglob("*.py")):
        if path.name == "checks.py":                     # where the option is defined
            continue
        if "reveal=True" in path.read_text():
            assert path.parent.name == "public", f"{path.relative_to(ROOT)}: a hidden test reveals expected values"


def test_reveal_shows_expected_and_actual_values_only_when_asked():
    import numpy as np

    from autograder.suites import checks
    want, got = np.array([[1.0, 2.0]]), np.array([[1.0, 3.5]])
    for kwargs in ({}, {"reveal": True}):
        for check in (checks.expect_equal, checks.expect_close):
            with pytest.raises(checks.GradingFailure) as info:
                check(got, want, "x", **kwargs)
            shown = "3.5" in str(info.value) and "2." in str(info.value)
            assert shown == bool(kwargs), (check.__name__, kwargs, str(info.value))
