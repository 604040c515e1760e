"""The contract's coverage matrix (autograder/coverage_rows.py): every cell covered by a hidden
test that exists, or marked not applicable with a reason; docs/COVERAGE.md up to date."""
from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache

import pytest

from autograder import contract, coverage
from autograder.coverage_rows import NA, ROWS, RULES
from helpers import ROOT


@lru_cache(maxsize=1)
def _collected() -> tuple[coverage.Collected, ...]:
    """The hidden suites' tests, collected once in a fresh interpreter (as the generator does)."""
    proc = subprocess.run([sys.executable, "-m", "autograder.coverage", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tuple(coverage.Collected(ex, node, tuple(cov)) for ex, node, cov in json.loads(proc.stdout))


def test_every_hidden_test_says_what_it_covers():
    """``covers`` on every hidden test; nothing is inferred from a docstring."""
    from suite_covers import hidden_without_covers
    missing = hidden_without_covers()
    assert not missing, "hidden tests without @pytest.mark.covers(...):\n" + "\n".join(missing[:40])


def test_every_cell_is_covered_or_not_applicable():
    found = coverage.problems(list(_collected()))
    assert not found, "\n".join(found)


def test_every_contract_name_has_a_row_with_every_rule():
    for ex in contract.EXERCISES:
        for name in ex.names:
            assert any(r.exercise == ex.id and r.name.split(".")[0] == name for r in ROWS), (ex.id, name)
    for row in ROWS:
        assert set(RULES) <= set(row.cells), (row.name, sorted(set(RULES) - set(row.cells)))
        for rule, value in row.cells.items():
            assert isinstance(value, (tuple, NA)), (row.name, rule)
            assert not isinstance(value, NA) or value.reason.strip(), (row.name, rule)


def test_problems_are_reported():
    """A cell without a test, a named test that does not exist, a marker naming no cell."""
    without_new = [t for t in _collected() if "test_contract_rules.py" not in t.nodeid]
    assert "ex4 causal_self_attention · inputs/shared: no hidden test covers it" in coverage.problems(without_new)
    renamed = [coverage.Collected(t.exercise, t.nodeid.replace("test_softmax.py", "test_softmax_x.py"), t.covers)
               for t in _collected()]
    assert "ex1 softmax · args/axis: names test_softmax.py::test_softmax_along_axis, which the suite does " \
        "not have" in coverage.problems(renamed)
    typo = list(_collected()) + [coverage.Collected("ex4", "ex4_causal_mask/t.py::t", ("combine_masks:args/nope",))]
    assert "ex4_causal_mask/t.py::t: covers 'combine_masks:args/nope', which is no cell of the matrix" \
        in coverage.problems(typo)


def test_the_doc_is_up_to_date():
    doc = ROOT / "docs" / "COVERAGE.md"
    want = coverage.render(list(_collected()))
    assert doc.is_file() and doc.read_text(encoding="utf-8") == want, \
        "docs/COVERAGE.md is stale: .venv/bin/python -m autograder.coverage > docs/COVERAGE.md"


@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_new_rule_tests_live_in_their_own_files(ex):
    """The rule tests added for the matrix are in test_contract_rules.py of each suite."""
    assert (ROOT / "autograder" / "suites" / ex.folder / "test_contract_rules.py").is_file()
