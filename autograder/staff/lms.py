"""The gradebook files: ``grades.csv`` and the LMS imports (``canvas.csv``, ``moodle.csv``).

``grades.csv``: **one row per person**. A group submission gives each member their own row
with the group's grade, their own email and SID (``group`` names the group). Columns:
``student, email, sid, submission, group, ex1 … exN`` [``, <one per test>``] [late policy:
``, submitted_at, submitted_from, due, late_hours, late_penalty_percent, raw_total``]
``, total, max_total, status, reason``. ``total`` is the final grade (the raw total less any
late penalty). Every score is exact (:func:`autograder.staff.model.decimal_text`); a test a
submission was not graded on has an empty cell.

``canvas.csv``: Canvas's gradebook import (Grades → Import): the header ``Student, ID,
SIS User ID, SIS Login ID, Section, <assignment> (<id>)``, then a ``Points Possible`` row,
then one row per person. Canvas finds each student by ``ID`` (Canvas's own user id, which a
Gradescope export does not have: left empty), else ``SIS User ID`` (the SID), else ``SIS Login
ID`` (here the email), else by name; a column without ``(id)`` becomes a new assignment of
that name on import. A submission the kit could not grade (``timeout``, ``error``) gets an
empty cell: Canvas leaves that student's grade alone, the report lists them for a grade by hand.

``moodle.csv``: Moodle's CSV grade import (Grades → Import → CSV file): ``Email address, ID
number, Full name, <assignment>``; map "Email address" to the user's email (or "ID number"
to the ID number) and the assignment column to the grade item. Moodle stops an import at a
user it cannot find, so only rows with an email or SID are written (the rest are counted in
the report).

Every text cell is one line and never starts like a spreadsheet formula (``=``, ``+``,
``-``, ``@``: a leading ``'`` is added).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from autograder import contract, results, textsafe
from autograder.staff.model import Line, decimal_text, exact, is_graded, status_text


def csv_cell(text: object) -> str:
    """One CSV cell: one line, and never a formula for a spreadsheet (=, +, -, @ first)."""
    text = results.one_line(text, 500)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def per_test_columns(lines: Sequence[Line]) -> list[str]:
    """Every test name in the class, in the order first met (per-test columns)."""
    seen: dict[str, None] = {}
    for line in lines:
        for test in line.view.row.tests:
            seen.setdefault(results.one_line(test.get("name", "?"), 300), None)
    return list(seen)


def _test_scores(line: Line) -> dict[str, str]:
    return {results.one_line(t.get("name", "?"), 300): decimal_text(results.result_score(t))
            for t in line.view.row.tests}


def _atomic_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    tmp.replace(path)


# --------------------------------------------------------------------------- grades.csv

LATE_COLUMNS = ["submitted_at", "submitted_from", "due", "late_hours", "late_penalty_percent", "raw_total"]


def gradebook_header(exercises: Sequence[contract.Exercise], tests: Sequence[str], late: bool) -> list[str]:
    return ["student", "email", "sid", "submission", "group", *(ex.id for ex in exercises), *tests,
            *(LATE_COLUMNS if late else []), "total", "max_total", "status", "reason"]


def write_gradebook(path: Path, lines: Sequence[Line], exercises: Sequence[contract.Exercise], *,
                    per_test: bool = False, late: bool = False) -> None:
    """``grades.csv``: one row per person (see the module docstring)."""
    tests = per_test_columns(lines) if per_test else []
    max_total = sum((exact(ex.points) for ex in exercises), exact(0))
    rows = []
    for line in lines:
        entry, row = line.view.entry, line.view.row
        cells = [csv_cell(line.person.name), csv_cell(line.person.email), csv_cell(line.person.sid),
                 csv_cell(textsafe.name(entry.path.name, None)), csv_cell(line.group),
                 *(decimal_text(row.scores.get(ex.id, 0.0)) for ex in exercises)]
        if tests:
            scores = _test_scores(line)
            cells += [scores.get(name, "") for name in tests]
        if late:
            cells += _late_cells(line)
        cells += [decimal_text(line.final), decimal_text(max_total), status_text(row), csv_cell(row.reason)]
        rows.append(cells)
    _atomic_csv(path, gradebook_header(exercises, tests, late), rows)


def _late_cells(line: Line) -> list[str]:
    outcome = line.late
    if outcome is None:
        return ["", "", "", "", "", decimal_text(line.raw)]
    when = outcome.submitted.when
    return [when.isoformat() if when else "", outcome.submitted.source, outcome.due.isoformat(),
            format(outcome.late_hours.normalize(), "f") if outcome.late else "0",
            format(outcome.percent.normalize(), "f"), decimal_text(line.raw)]


# --------------------------------------------------------------------------- LMS imports

@dataclass(frozen=True)
class Export:
    """An LMS export written: its file, and the people it could not carry."""
    lms: str
    path: Path
    rows: int
    left_out: tuple[str, ...] = ()        # people without a grade in it (ungraded, or unmatched)
    why_left_out: str = ""


def _lms_grade(line: Line) -> str:
    """The grade an LMS gets: empty when the kit could not grade the submission (a timeout,
    an error): a grade by hand, not a zero."""
    if not is_graded(line.view.row) and status_text(line.view.row) != "no files":
        return ""
    return decimal_text(line.final)


def canvas_header_name(name: str, assignment_id: str) -> str:
    return f"{name} ({assignment_id})" if assignment_id else name


def write_canvas(path: Path, lines: Sequence[Line], max_total, *, assignment_name: str,
                 assignment_id: str = "") -> Export:
    """``canvas.csv`` (see the module docstring)."""
    column = canvas_header_name(csv_cell(assignment_name), assignment_id)
    rows = [["Points Possible", "", "", "", "", decimal_text(max_total)]]
    ungraded = []
    for line in lines:
        grade = _lms_grade(line)
        if grade == "":
            ungraded.append(line.person.name)
        rows.append([csv_cell(line.person.name), "", csv_cell(line.person.sid), csv_cell(line.person.email), "", grade])
    _atomic_csv(path, ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column], rows)
    return Export("canvas", Path(path), len(lines), tuple(ungraded),
                  "not graded by the kit (timeout or error): empty cells, Canvas keeps their grades")


def write_moodle(path: Path, lines: Sequence[Line], *, assignment_name: str) -> Export:
    """``moodle.csv`` (see the module docstring)."""
    rows, left_out = [], []
    for line in lines:
        grade = _lms_grade(line)
        if not (line.person.email or line.person.sid) or grade == "":
            left_out.append(line.person.name)
            continue
        rows.append([csv_cell(line.person.email), csv_cell(line.person.sid), csv_cell(line.person.name), grade])
    _atomic_csv(path, ["Email address", "ID number", "Full name", csv_cell(assignment_name)], rows)
    return Export("moodle", Path(path), len(rows), tuple(left_out),
                  "no email or SID to match in Moodle, or not graded by the kit (timeout or error)")
