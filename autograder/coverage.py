"""What is graded: the contract's sentences and the coverage matrix, filled from the hidden suites.

Two views of the same tests (the engine's one collection, :func:`autograder.grading.collect`):

* **the contract's sentences**: every sentence of EXERCISES.md an exercise's tests may cite
  (its ``Exercise.contract`` and :data:`autograder.exercise.CONVENTIONS`) and the hidden
  tests that cite it with ``@pytest.mark.contract("<id>")``. Every point a student can lose
  traces to one: a graded test cites a sentence, a check the contract does not make is a
  ``@pytest.mark.note("why")`` worth 0 points, and a sentence that is a rule has a test;
* **the function × rule matrix**: every public function and method (the exercise's
  ``Exercise.rows``) against every rule of the contract that applies to it; a cell's tests
  are those marked ``@pytest.mark.covers("<function>:<rule>")``, e.g.
  ``covers("causal_self_attention:inputs/shared")`` or ``covers("MultiHeadAttention.forward:device")``.

    python -m autograder.coverage > docs/COVERAGE.md     # both, for instructors
    python -m autograder.coverage --json                 # the engine's test records, as JSON

``tests/test_coverage_matrix.py`` fails on any :func:`problems` and when docs/COVERAGE.md is stale.
"""
from __future__ import annotations

import argparse
import json
import sys

from autograder import contract
from autograder.exercise import EXTRA_PREFIXES, NA, RULES, Exercise, Row
from autograder.records import TestRecord


def collect(exercises: tuple[Exercise, ...] | None = None) -> list[TestRecord]:
    """The engine's records of every test of ``exercises`` (default: every exercise)."""
    from autograder.grading import collect as engine_collect
    return engine_collect(tuple(exercises or contract.EXERCISES))


def rules_of(row: Row) -> list[str]:
    """The row's cells in display order: the common rules, then its own extras."""
    return list(RULES) + [r for r in row.cells if r not in RULES]


def _hidden(tests: list[TestRecord]) -> list[TestRecord]:
    return [t for t in tests if not t.public]


def cell_tests(tests: list[TestRecord], exercises: tuple[Exercise, ...] | None = None
               ) -> dict[tuple[str, str, str], list[str]]:
    """(exercise, function, rule) -> the hidden tests marked as covering it (``test_x.py::test_y``)."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for ex in exercises or contract.EXERCISES:
        for row in ex.rows:
            for rule in rules_of(row):
                out[(ex.id, row.name, rule)] = []
    for test in _hidden(tests):
        for cover in test.covers:
            name, _, rule = cover.partition(":")
            key = (test.exercise, name, rule)
            if rule and key in out and test.short not in out[key]:
                out[key].append(test.short)
    return out


def sentence_tests(tests: list[TestRecord], exercises: tuple[Exercise, ...] | None = None
                   ) -> dict[tuple[str, str], list[str]]:
    """(exercise, sentence id) -> the tests that cite it (hidden and public, by name)."""
    out: dict[tuple[str, str], list[str]] = {}
    for ex in exercises or contract.EXERCISES:
        for sentence_id in ex.sentences:
            out[(ex.id, sentence_id)] = []
    for test in tests:
        for cited in test.contract:
            if (test.exercise, cited) in out and test.short not in out[(test.exercise, cited)]:
                out[(test.exercise, cited)].append(test.short)
    return out


def untested_sentences(tests: list[TestRecord], exercises: tuple[Exercise, ...] | None = None) -> list[str]:
    """Every rule of the contract that no test cites (there must be none): an exercise's own
    sentences by its tests, a convention by any exercise's."""
    exercises = tuple(exercises or contract.EXERCISES)
    cited = sentence_tests(tests, exercises)
    out = [f"{ex.id} {s.id}: no test cites it ({s.text[:80]})"
           for ex in exercises for s in ex.contract if not s.untested and not cited[(ex.id, s.id)]]
    out += [f"{s.id}: no test of any exercise cites it ({s.text[:80]})" for s in contract.CONVENTIONS
            if not s.untested and not any(cited[(ex.id, s.id)] for ex in exercises)]
    return out


def tests_without_sentence(tests: list[TestRecord]) -> list[str]:
    """Every graded test (a weight above 0) that cites no sentence of the contract (there must be none)."""
    return [t.nodeid for t in tests if t.weight > 0 and not t.contract]


def notes(tests: list[TestRecord]) -> list[TestRecord]:
    """The 0-point notes: checks the contract does not make, kept as feedback."""
    return [t for t in tests if t.note]


def problems(tests: list[TestRecord], exercises: tuple[Exercise, ...] | None = None) -> list[str]:
    """Everything wrong: graded tests without a sentence, sentences (rules) without a test, unknown
    sentence ids, notes that cite or weigh, empty cells, markers naming no cell, functions without
    a row."""
    exercises = tuple(exercises or contract.EXERCISES)
    by_id = {ex.id: ex for ex in exercises}
    out = [f"{node}: a graded test that cites no sentence of the contract "
           "(@pytest.mark.contract(...), or make it a 0-point @pytest.mark.note(...))"
           for node in tests_without_sentence(tests)]
    out += untested_sentences(tests, exercises)
    for test in tests:
        ex = by_id.get(test.exercise)
        if ex is None:
            continue
        for cited in test.contract:
            if cited not in ex.sentences:
                out.append(f"{test.nodeid}: cites {cited!r}, which is no sentence of {ex.id} or the conventions")
        if test.note and (test.contract or test.weight):
            out.append(f"{test.nodeid}: a note is worth 0 points and cites no sentence (it is not in the contract)")
        if not test.note and test.weight == 0:
            out.append(f"{test.nodeid}: a test worth 0 points must say why (@pytest.mark.note(...))")
    cells = cell_tests(tests, exercises)
    for ex in exercises:
        rows = {r.name: r for r in ex.rows}
        for name in ex.names:
            if not any(r.name.split(".")[0] == name for r in ex.rows):
                out.append(f"{ex.id}: {name} has no row")
        for row in ex.rows:
            for rule in RULES:
                if rule not in row.cells:
                    out.append(f"{ex.id} {row.name}: no cell for rule {rule!r} (COVERED or an NA reason)")
            for rule, value in row.cells.items():
                if not isinstance(value, NA) and not cells[(ex.id, row.name, rule)]:
                    out.append(f"{ex.id} {row.name} · {rule}: no hidden test covers it")
        for test in _hidden(tests):
            if test.exercise != ex.id:
                continue
            for cover in test.covers:
                name, _, rule = cover.partition(":")
                if not (rule in RULES or rule.startswith(EXTRA_PREFIXES)):
                    continue                              # an older property such as softmax:inputs
                if (ex.id, name, rule) not in cells:
                    out.append(f"{test.nodeid}: covers {cover!r}, which is no cell of the matrix")
                elif isinstance(rows[name].cells.get(rule), NA):
                    out.append(f"{test.nodeid}: covers {cover!r}, a cell marked not applicable")
    return out


def _mark(value: object, tests: list[str]) -> str:
    if isinstance(value, NA):
        return "n/a"
    return f"✓ {len(tests)}" if tests else "**missing**"


def _quote(text: str) -> str:
    return text.replace("|", "\\|")


def render(tests: list[TestRecord], exercises: tuple[Exercise, ...] | None = None) -> str:
    """Both views as Markdown: per exercise, its sentences and the tests citing each, its notes,
    then its function × rule table and every cell's tests or reason."""
    exercises = tuple(exercises or contract.EXERCISES)
    cells = cell_tests(tests, exercises)
    cited = sentence_tests(tests, exercises)
    rows = [row for ex in exercises for row in ex.rows]
    covered = sum(1 for v in cells.values() if v)
    na = sum(1 for r in rows for rule in rules_of(r) if isinstance(r.cells.get(rule), NA))
    graded = [t for t in tests if t.weight > 0]
    lines = ["# What the hidden tests grade: the contract's sentences and the coverage matrix", "",
             "Generated by `python -m autograder.coverage > docs/COVERAGE.md` from each exercise's "
             "`autograder/suites/<folder>/exercise.py` and the suites' `contract`, `covers` and `note` "
             "markers; `tests/test_coverage_matrix.py` fails when it is stale, a graded test cites no "
             "sentence, a rule of the contract has no test, or a cell is empty.", "",
             f"{len(graded)} graded tests, each citing the sentences of the contract it grades; "
             f"{len(notes(tests))} notes worth 0 points (checks the contract does not make). "
             f"{len(rows)} functions and methods; {len(cells)} cells: {covered} covered by hidden "
             f"tests, {na} not applicable (with the reason).", "",
             f"Graded tests that cite no sentence: {len(tests_without_sentence(tests))}. "
             f"Rules of the contract that no test cites: {len(untested_sentences(tests, exercises))}.", "",
             "## The conventions of every exercise", ""]
    for sentence in contract.CONVENTIONS:
        users = {ex.id: cited[(ex.id, sentence.id)] for ex in exercises if cited[(ex.id, sentence.id)]}
        detail = (f"not a graded rule: {sentence.untested}" if sentence.untested else
                  "; ".join(f"{i}: {len(t)} test{'s' * (len(t) > 1)}" for i, t in users.items()) or "**no test**")
        lines.append(f"- `{sentence.id}`: “{_quote(sentence.text)}” — {detail}")
    lines += ["", "Columns of the matrices: " + "; ".join(f"`{k}` {v}" for k, v in RULES.items()) + ". "
              "Each row also has its own cells: `args/…` an argument at a value the other arguments "
              "do not imply, `mask/…` a broadcastable mask shape, `lead/…` the number of leading "
              "dims, `size/…` the smallest sizes of a shape rule, `ties`, `raises`, `structure`.", ""]
    for ex in exercises:
        lines += [f"## {ex.id} · {ex.title} (`{ex.filename}`)", "", "### The contract's sentences", "",
                  "| sentence | tests |", "|---|---|"]
        for sentence in ex.contract:
            users = cited[(ex.id, sentence.id)]
            detail = (f"not a graded rule: {_quote(sentence.untested)}" if sentence.untested else
                      ", ".join(f"`{t}`" for t in users) or "**no test**")
            lines.append(f"| `{sentence.id}`: “{_quote(sentence.text)}” | {detail} |")
        own_notes = [t for t in notes(tests) if t.exercise == ex.id]
        if own_notes:
            lines += ["", "### Notes worth 0 points (checks the contract does not make)", ""]
            lines += [f"- `{t.short}`: {t.note}" for t in own_notes]
        lines += ["", "### The function × rule matrix", "",
                  "| function | " + " | ".join(f"`{r}`" for r in RULES) + " | own cells |",
                  "|---|" + "---|" * (len(RULES) + 1)]
        for row in ex.rows:
            marks = [_mark(row.cells.get(r), cells[(ex.id, row.name, r)]) for r in RULES]
            own = [r for r in rules_of(row) if r not in RULES]
            lines.append(f"| `{row.name}` | " + " | ".join(marks) + f" | {len(own)} |")
        lines.append("")
        for row in ex.rows:
            lines += [f"#### `{row.name}`", ""]
            for rule in rules_of(row):
                value = row.cells.get(rule)
                detail = (f"n/a: {value.reason}" if isinstance(value, NA) else
                          ", ".join(f"`{t}`" for t in cells[(ex.id, row.name, rule)]) or "**missing**")
                lines.append(f"- `{rule}`: {detail}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.coverage", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the engine's test records as JSON")
    args = parser.parse_args(argv)
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):          # pytest's collection report
        tests = collect()
    if args.json:
        print(json.dumps([t.to_json() for t in tests]))
    else:
        sys.stdout.write(render(tests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
