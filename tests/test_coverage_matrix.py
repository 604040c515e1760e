"""What is graded: every graded test cites a sentence of the published contract, every rule of
the contract has a test, every cell of the function × rule matrix (each exercise's rows in its
``exercise.py``) is covered by a hidden test that exists or marked not applicable with a
reason, and docs/COVERAGE.md is up to date (autograder/coverage.py)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from autograder import contract, coverage
from autograder.exercise import NA, RULES
from helpers import ROOT, published_contract
from suite_covers import hidden_without_covers, records


def _spec() -> str:
    """The published contract (helpers.published_contract), ``**bold**`` marks dropped, blanks
    collapsed."""
    return re.sub(r"\s+", " ", published_contract().read_text(encoding="utf-8").replace("**", ""))


def _section(spec: str, ex: contract.Exercise) -> str:
    """An exercise's section of the contract: from its ``## exN —`` heading to the next one."""
    start = spec.index(f"## {ex.id} ")
    following = spec.find(" ## ", start + 1)
    return spec[start:following if following > 0 else len(spec)]


def test_every_sentence_is_quoted_from_its_section_of_the_contract():
    spec = _spec()
    conventions = spec[:spec.index("## ex")]
    for sentence in contract.CONVENTIONS:
        assert re.sub(r"\s+", " ", sentence.text) in conventions, sentence.id
    for ex in contract.EXERCISES:
        section = _section(spec, ex)
        for sentence in ex.contract:
            assert re.sub(r"\s+", " ", sentence.text) in section, (ex.id, sentence.id, sentence.text)
        assert len({s.id for s in ex.contract}) == len(ex.contract), ex.id


def test_every_graded_test_cites_a_sentence_and_every_rule_has_a_test():
    """The notes of GRADER.md's "Deductions": both lists must be empty."""
    tests = list(records())
    assert len(tests) > 200                                    # the collection is real
    assert coverage.tests_without_sentence(tests) == []
    assert coverage.untested_sentences(tests) == []


def test_every_hidden_test_says_what_it_covers():
    """``covers`` on every hidden test; nothing is inferred from a docstring."""
    missing = hidden_without_covers()
    assert not missing, "hidden tests without @pytest.mark.covers(...):\n" + "\n".join(missing[:40])


def test_nothing_is_wrong_with_the_sentences_or_the_matrix():
    found = coverage.problems(list(records()))
    assert not found, "\n".join(found)


def test_every_contract_name_has_a_row_with_every_rule():
    for ex in contract.EXERCISES:
        for name in ex.names:
            assert any(r.name.split(".")[0] == name for r in ex.rows), (ex.id, name)
        for row in ex.rows:
            assert set(RULES) <= set(row.cells), (row.name, sorted(set(RULES) - set(row.cells)))
            for rule, value in row.cells.items():
                assert isinstance(value, (tuple, NA)), (row.name, rule)
                assert not isinstance(value, NA) or value.reason.strip(), (row.name, rule)


def _first(tests, **where):
    return next(t for t in tests if all(getattr(t, k) == v for k, v in where.items()))


def test_problems_are_reported():
    """A graded test without a sentence, a sentence without a test, an unknown sentence id, a note
    that weighs, a cell without a test, a marker naming no cell."""
    tests = list(records())
    banned_test = _first(tests, exercise="ex1", short="test_rules.py::test_no_banned_apis")
    cut = [dataclasses.replace(t, contract=()) if t is banned_test else t for t in tests]
    found = coverage.problems(cut)
    assert f"{banned_test.nodeid}: a graded test that cites no sentence of the contract " \
        "(@pytest.mark.contract(...), or make it a 0-point @pytest.mark.note(...))" in found
    assert any(p.startswith("ex1 numpy-only: no test cites it") for p in found)
    typo = [dataclasses.replace(t, contract=("numpy-olny",)) if t is banned_test else t for t in tests]
    assert f"{banned_test.nodeid}: cites 'numpy-olny', which is no sentence of ex1 or the conventions" \
        in coverage.problems(typo)
    note = next(t for t in tests if t.note)
    weighing = [dataclasses.replace(t, weight=0.5) if t is note else t for t in tests]
    assert any(p.startswith(f"{note.nodeid}: a note is worth 0 points") for p in coverage.problems(weighing))
    without_new = [t for t in tests if "test_contract_rules.py" not in t.nodeid]
    assert "ex4 causal_self_attention · inputs/shared: no hidden test covers it" in coverage.problems(without_new)
    extra = dataclasses.replace(banned_test, nodeid="ex4_causal_mask/t.py::t", exercise="ex4",
                                covers=("combine_masks:args/nope",), contract=("combine_masks/pattern",))
    assert "ex4_causal_mask/t.py::t: covers 'combine_masks:args/nope', which is no cell of the matrix" \
        in coverage.problems(tests + [extra])


def test_notes_are_worth_nothing_and_say_why():
    notes = coverage.notes(list(records()))
    assert notes, "the suites keep their checks beyond the contract as notes"
    for t in notes:
        assert t.weight == 0 and t.points == 0 and not t.contract and len(t.note) > 40, t.nodeid
        assert t.title.startswith("note (0 points): "), t.title


def test_the_doc_is_up_to_date():
    doc = ROOT / "docs" / "COVERAGE.md"
    want = coverage.render(list(records()))
    assert doc.is_file() and doc.read_text(encoding="utf-8") == want, \
        "docs/COVERAGE.md is stale: .venv/bin/python -m autograder.coverage > docs/COVERAGE.md"


@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_new_rule_tests_live_in_their_own_files(ex):
    """The rule tests added for the matrix are in test_contract_rules.py of each suite."""
    assert (contract.SUITES / ex.folder / "test_contract_rules.py").is_file()


@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_test_names_read_as_written(ex):
    """A parameter id of a character outside ASCII reaches results.json escaped by pytest
    (``[LSTMClassifier.forward \\xb7 tensor]``): every test's name shows no escape."""
    from autograder.interop import adapter
    escaped = [t.title for t in adapter.collect_tests(ex.id) if re.search(r"\\[xuU][0-9a-fA-F]{2}", t.title)]
    assert not escaped, escaped
