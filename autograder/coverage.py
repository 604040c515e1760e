"""What is graded: the contract's coverage matrix, filled from the hidden suites.

Rows and cells are data (``autograder.coverage_rows``). A cell's tests are the ones it
names plus every hidden test marked ``@pytest.mark.covers("<function>:<rule>")``, e.g.
``covers("causal_self_attention:inputs/shared")`` or ``covers("MultiHeadAttention.forward:device")``.

    python -m autograder.coverage > docs/COVERAGE.md     # the matrix for instructors
    python -m autograder.coverage --json                 # the collected tests, as JSON

``tests/test_coverage_matrix.py`` fails when a cell has no test, a named test does not
exist, a marker names no cell, or docs/COVERAGE.md is stale.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass

from autograder import contract
from autograder.coverage_rows import EXTRA_PREFIXES, NA, ROWS, RULES, Row


@dataclass(frozen=True)
class Collected:
    """One hidden test: its exercise, node id (``ex4_causal_mask/test_masks.py::test_x[id]``)
    and covers marker arguments."""
    exercise: str
    nodeid: str
    covers: tuple[str, ...]

    @property
    def short(self) -> str:
        """``test_masks.py::test_x`` (suite folder and parameters dropped)."""
        return re.sub(r"\[.*\]$", "", self.nodeid.split("/", 1)[-1])


def collect() -> list[Collected]:
    """Collect every hidden suite (pytest's ``--collect-only``, in this process)."""
    import pytest

    from autograder.grading import pytest_args
    from autograder.plugin import exercise_of

    found: list[Collected] = []

    class Recorder:
        def pytest_collection_modifyitems(self, items: list) -> None:
            for item in items:
                covers = tuple(a for m in item.iter_markers("covers") for a in m.args)
                found.append(Collected(exercise_of(item), item.nodeid, covers))

    code = pytest.main(pytest_args(contract.EXERCISES, "--collect-only"), plugins=[Recorder()])
    if code != 0:
        raise RuntimeError(f"collecting the hidden suites failed (pytest exit code {code})")
    return found


def rules_of(row: Row) -> list[str]:
    """The row's cells in display order: the common rules, then its own extras."""
    return list(RULES) + [r for r in row.cells if r not in RULES]


def cell_tests(tests: list[Collected]) -> dict[tuple[str, str, str], list[str]]:
    """(exercise, function, rule) -> the tests that cover it: named in the row, or marked."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for row in ROWS:
        for rule in rules_of(row):
            value = row.cells.get(rule)
            out[(row.exercise, row.name, rule)] = [] if isinstance(value, NA) or value is None else list(value)
    for test in tests:
        for cover in test.covers:
            name, _, rule = cover.partition(":")
            key = (test.exercise, name, rule)
            if rule and key in out and test.short not in out[key]:
                out[key].append(test.short)
    return out


def problems(tests: list[Collected]) -> list[str]:
    """Everything wrong with the matrix: empty cells, unknown tests, markers naming no cell."""
    out: list[str] = []
    names = {(t.exercise, t.short) for t in tests}
    cells = cell_tests(tests)
    rows = {(r.exercise, r.name): r for r in ROWS}
    for ex in contract.EXERCISES:
        for name in ex.names:
            if not any(r.exercise == ex.id and r.name.split(".")[0] == name for r in ROWS):
                out.append(f"{ex.id}: {name} has no row")
    for (ex, name, rule), covered in cells.items():
        value = rows[(ex, name)].cells.get(rule)
        if value is None:
            out.append(f"{ex} {name}: no cell for rule {rule!r} (a test or an NA reason)")
        elif not isinstance(value, NA) and not covered:
            out.append(f"{ex} {name} · {rule}: no hidden test covers it")
        for test in covered:
            if (ex, test) not in names:
                out.append(f"{ex} {name} · {rule}: names {test}, which the suite does not have")
    for test in tests:
        for cover in test.covers:
            name, _, rule = cover.partition(":")
            if not (rule in RULES or rule.startswith(EXTRA_PREFIXES)):
                continue                              # an older property such as softmax:inputs
            if (test.exercise, name, rule) not in cells:
                out.append(f"{test.nodeid}: covers {cover!r}, which is no cell of the matrix")
            elif isinstance(rows[(test.exercise, name)].cells.get(rule), NA):
                out.append(f"{test.nodeid}: covers {cover!r}, a cell marked not applicable")
    return out


def _mark(value: object, tests: list[str]) -> str:
    if isinstance(value, NA):
        return "n/a"
    return f"✓ {len(tests)}" if tests else "**missing**"


def render(tests: list[Collected]) -> str:
    """The matrix as Markdown: one summary table per exercise, then every cell's tests or reason."""
    cells = cell_tests(tests)
    covered = sum(1 for k, v in cells.items() if v)
    na = sum(1 for r in ROWS for rule in rules_of(r) if isinstance(r.cells.get(rule), NA))
    lines = ["# What the hidden tests grade: the contract's coverage matrix", "",
             "Generated by `python -m autograder.coverage > docs/COVERAGE.md` from "
             "`autograder/coverage_rows.py` and the hidden suites' `covers` markers; "
             "`tests/test_coverage_matrix.py` fails when it is stale or a cell is empty.", "",
             f"{len(ROWS)} functions and methods; {len(cells)} cells: {covered} covered by hidden "
             f"tests, {na} not applicable (with the reason).", "",
             "Columns: " + "; ".join(f"`{k}` {v}" for k, v in RULES.items()) + ". "
             "Each row also has its own cells: `args/…` an argument at a value the other arguments "
             "do not imply, `mask/…` a broadcastable mask shape, `lead/…` the number of leading "
             "dims, `ties`, `raises`, `structure`.", ""]
    for ex in contract.EXERCISES:
        rows = [r for r in ROWS if r.exercise == ex.id]
        lines += [f"## {ex.id} · {ex.title} (`{ex.filename}`)", "",
                  "| function | " + " | ".join(f"`{r}`" for r in RULES) + " | own cells |",
                  "|---|" + "---|" * (len(RULES) + 1)]
        for row in rows:
            marks = [_mark(row.cells.get(r), cells[(ex.id, row.name, r)]) for r in RULES]
            own = [r for r in rules_of(row) if r not in RULES]
            lines.append(f"| `{row.name}` | " + " | ".join(marks) + f" | {len(own)} |")
        lines.append("")
        for row in rows:
            lines.append(f"### `{row.name}`")
            lines.append("")
            for rule in rules_of(row):
                value = row.cells.get(rule)
                detail = (f"n/a: {value.reason}" if isinstance(value, NA) else
                          ", ".join(f"`{t}`" for t in cells[(ex.id, row.name, rule)]) or "**missing**")
                lines.append(f"- `{rule}`: {detail}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.coverage", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the collected tests as JSON")
    args = parser.parse_args(argv)
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):          # pytest's collection report
        tests = collect()
    if args.json:
        print(json.dumps([[t.exercise, t.nodeid, list(t.covers)] for t in tests]))
    else:
        sys.stdout.write(render(tests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
