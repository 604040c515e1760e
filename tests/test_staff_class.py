"""The course staff's view of a real class: 32 submissions from the kit's corpora (correct,
buggy, hostile, a group of two, late ones, a near-copy: tests/staff_class.py) graded once
by ``batch`` as a TA would run it (a Gradescope export, a late policy with an extension,
the Canvas and Moodle imports, per-test columns), then checked cell by cell against what the
kit graded (each ``results.json``): ``grades.csv``, ``canvas.csv``, ``moodle.csv``, and
``report.html`` as headless Chromium renders it. Then ``batch --only`` regrades one student
and keeps every other row.

The expected values are worked out here from the results files and the class's own records
(submission times, extensions, lineages), not from the code under test.
"""
from __future__ import annotations

import csv
import hashlib
import math
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
import staff_class  # noqa: E402

from autograder import results  # noqa: E402
from autograder.cli import main  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker users (root)")
ASSIGNMENT = "Attention HW 1"
ASSIGNMENT_ID = "4711"
LOOK_SHARE, LOOK_MIN = 0.9, 5                # the report's definition of "look at this test"


def _options(extensions: Path) -> list[str]:
    return ["--due", staff_class.DUE.isoformat(), "--late-penalty", staff_class.PENALTY,
            "--late-cutoff", staff_class.CUTOFF, "--extensions", str(extensions), "--lms", "canvas,moodle",
            "--assignment-name", ASSIGNMENT, "--assignment-id", ASSIGNMENT_ID, "--per-test"]


def _batch(export: Path, out: Path, *extra: str) -> int:
    """(Its job slots run as this test process's worker users: conftest.py.)"""
    return main(["batch", str(export), "--out", str(out / "grades.csv"), "--jobs", "2", "--no-progress",
                 "--student-timeout", "400", *extra])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class, graded once: (export folder, output folder, students, extensions CSV)."""
    root = tmp_path_factory.mktemp("staff-class")
    export, students = staff_class.build(root)
    extensions = staff_class.write_extensions(root / "extensions.csv", students)
    out = root / "marks"
    assert _batch(export, out, *_options(extensions)) == 0
    return export, out, students, extensions


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _results(out: Path, student: staff_class.Student) -> dict:
    return results.load(out / "results" / student.folder / "results.json")


def _dec(value: float) -> Decimal:
    return Decimal(repr(float(value)))


def _final(student: staff_class.Student, raw: Decimal) -> tuple[Decimal, Decimal]:
    """(late hours, final total) by the class's policy: 10 % of the 100 points per started day
    after the due date (moved by an extension), zero after due + 72 h."""
    when = student.created_at or student.files_time
    due = staff_class.DUE + timedelta(hours=student.extension_hours)
    late = max(timedelta(0), when - due)
    if late > timedelta(hours=72):
        return Decimal(late.total_seconds()) / 3600, Decimal(0)
    days = math.ceil(late / timedelta(days=1))
    return Decimal(late.total_seconds()) / 3600, max(Decimal(0), raw - 10 * days)


# --------------------------------------------------------------------------- grades.csv

def test_gradebook_cell_by_cell(graded):
    export, out, students, _ = graded
    table = _csv(out / "grades.csv")
    assert len(table) == sum(len(s.names) for s in students) == 33
    by_folder = defaultdict(list)
    for row in table:
        by_folder[row["submission"]].append(row)
    tests_seen = [c for c in table[0] if c.startswith("ex") and " · " in c]
    for student in students:
        data = _results(out, student)
        rows = by_folder[student.folder]
        assert [(r["student"], r["email"], r["sid"]) for r in rows] == list(zip(
            map(results.one_line, student.names), student.emails, student.sids))     # one safe line each
        outcomes = results.outcomes_from_json(data)
        by_name = {t["name"]: t for t in data["tests"]}
        for row in rows:                                           # a group: each member, the same grade
            assert row["group"] == (" & ".join(student.names) if len(student.names) > 1 else "")
            for ex in staff_class.EXERCISES:
                expected = _dec(outcomes[ex.id].score) if ex.id in outcomes else Decimal(0)
                assert Decimal(row[ex.id]) == expected, (student.folder, ex.id)
            for name in tests_seen:
                cell = row[name]
                assert (cell == "") if name not in by_name else Decimal(cell) == _dec(by_name[name]["score"])
            raw = Decimal(row["raw_total"])
            assert raw == sum(Decimal(row[ex.id]) for ex in staff_class.EXERCISES) == _dec(data["score"])
            hours, final = _final(student, raw)
            assert Decimal(row["total"]) == final and row["max_total"] == "100"
            assert Decimal(row["late_hours"]) == hours.quantize(Decimal("0.01"))
            assert row["submitted_from"] == ("metadata" if student.created_at else "files")
            assert row["status"] == ("no files" if student.kind == "nofiles" else "ok")
    assert set(tests_seen) == {t["name"] for s in students for t in _results(out, s)["tests"]}
    group = [r for r in table if r["group"]]
    assert [r["student"] for r in group] == list(staff_class.GROUP) and len({r["total"] for r in group}) == 1


def test_lms_imports_cell_by_cell(graded):
    _, out, students, _ = graded
    grades = {(r["email"], r["sid"]): r for r in _csv(out / "grades.csv")}
    with open(out / "canvas.csv", newline="", encoding="utf-8") as handle:
        canvas = list(csv.reader(handle))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{ASSIGNMENT} ({ASSIGNMENT_ID})"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "100"]
    people = [(n, e, s) for st in students for n, e, s in zip(st.names, st.emails, st.sids)]
    assert len(canvas) == 2 + len(people)
    for (name, email, sid), cells in zip(people, canvas[2:]):
        assert cells[:5] == [results.one_line(name), "", sid, email, ""]
        assert cells[5] == grades[(email, sid)]["total"] != ""             # every one graded: a number
    moodle = _csv(out / "moodle.csv")
    assert [(r["Email address"], r["ID number"], r["Full name"], r[ASSIGNMENT]) for r in moodle] == \
        [(e, s, results.one_line(n), grades[(e, s)]["total"]) for n, e, s in people]


# --------------------------------------------------------------------------- report.html in Chromium

def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("Chromium is missing (.ci/run installs Debian's chromium)")
    pytest.skip("Chromium is not installed here and CI is not set (apt-get install chromium)")


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium, no network, a throw-away profile."""
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={tmp / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def dom(graded, tmp_path_factory):
    from bs4 import BeautifulSoup
    _, out, _, _ = graded
    shown = chromium(tmp_path_factory.mktemp("chromium"), "--dump-dom", (out / "report.html").as_uri())
    assert shown.returncode == 0 and "<html" in shown.stdout, shown.stderr[-2000:]
    return BeautifulSoup(shown.stdout, "html.parser")


def _table(dom, table_id: str) -> list[list[str]]:
    table = dom.find("table", id=table_id)
    return [[cell.get_text(" ", strip=True) for cell in tr.find_all("td")] for tr in table.tbody.find_all("tr")] \
        if table else []


def test_report_shows_the_students_needing_a_look(graded, dom):
    _, out, students, _ = graded
    expected = set()
    for s in students:
        data = _results(out, s)
        outcomes = results.outcomes_from_json(data)
        not_run = [o for o in outcomes.values() if o.status != results.ExerciseStatus.GRADED]
        reached = (data.get("extra_data") or {}).get("reach_ins")
        _, final = _final(s, _dec(data["score"]))
        after_cutoff = (s.created_at or s.files_time) > staff_class.DUE + timedelta(hours=72 + s.extension_hours)
        if not_run or reached or s.kind == "nofiles" or after_cutoff:
            expected.add(s.names[0])
    rows = _table(dom, "attention-table")
    assert {r[0] for r in rows} == {results.one_line(n) for n in expected}
    assert dom.find(id="attention-count").get_text() == str(len(expected))
    reach = next(r for r in rows if r[0] == next(s.names[0] for s in students if s.kind == "hostile"))
    assert "reached into the kit" in reach[3]                                  # frame snooping
    assert any("syntax error: ex1" in r[3] for r in rows)


def test_report_flags_the_tests_nearly_everyone_fails_and_ranks_them(graded, dom):
    _, out, students, _ = graded
    passed, counted = defaultdict(int), defaultdict(int)
    for s in students:
        data = _results(out, s)
        if s.kind == "nofiles":
            continue
        outcomes = results.outcomes_from_json(data)
        for t in data["tests"]:
            ex = results.exercise_of_result(t)
            if outcomes[ex].status == results.ExerciseStatus.GRADED:
                counted[t["name"]] += 1
                passed[t["name"]] += t["status"] == "passed"
    look = {n for n in counted if counted[n] >= LOOK_MIN and counted[n] - passed[n] >= LOOK_SHARE * counted[n]}
    assert {r[0] for r in _table(dom, "look-table")} == look
    assert dom.find(id="look-count").get_text() == str(len(look))
    ranked = _table(dom, "tests-table")
    assert len(ranked) == len(counted)
    shown = {r[1].removesuffix(" look"): r[2] for r in ranked}
    assert shown == {n: f"{passed[n]} / {counted[n]}" for n in counted}
    rates = [passed[r[1].removesuffix(" look")] / counted[r[1].removesuffix(" look")] for r in ranked]
    assert rates == sorted(rates)


def test_report_names_each_misconception_and_who_has_it(graded, dom):
    _, out, students, _ = graded
    who = defaultdict(list)
    for s in students:
        for t in _results(out, s)["tests"]:
            cause = results.cause_of_result(t)             # the sentences of its cause ids
            if t["status"] != "passed" and cause:
                key = (results.exercise_of_result(t), cause)
                if " & ".join(s.names) not in who[key]:
                    who[key].append(" & ".join(s.names))
    rows = _table(dom, "misconceptions-table")
    assert len(rows) == len(who) == int(dom.find(id="misconception-count").get_text())
    shown = {(r[1], r[2].split(" named by ")[0]): (int(r[0]), r[3]) for r in rows}
    for (ex, cause), names in who.items():
        text = " ".join(part.strip() for part in results.block(cause).split("\n") if part.strip())
        count, people = shown[(ex, text)]
        assert count == len(names) and people == "; ".join(results.one_line(n) for n in names)
    shared = [k for k, names in who.items() if len(names) >= 2]
    assert shared, "the class shares misconceptions (the mask convention inverted, the missing scaling)"


def test_report_shows_late_students_and_similar_pairs(graded, dom):
    _, out, students, _ = graded
    late = {r[0]: r for r in _table(dom, "late-table")}
    expected = {s.names[0] for s in students
                if (s.created_at or s.files_time) > staff_class.DUE or s.extension_hours}
    assert set(late) == expected and len(expected) == 4
    copy = next(s for s in students if s.kind == "copy")
    assert "newest file time" in late[copy.names[0]][2]
    extended = next(s for s in students if s.extension_hours)
    assert "extension" in late[extended.names[0]][3] and late[extended.names[0]][6] == late[extended.names[0]][7]
    pairs = {frozenset(r[:2]) for r in _table(dom, "similar-table")}
    by_lineage = defaultdict(list)
    for s in students:
        if s.lineage and s.kind in ("bug", "copy") or s.kind == "correct":
            by_lineage[s.lineage].append(" & ".join(s.names))
    copies = {frozenset((a, b)) for names in by_lineage.values() for i, a in enumerate(names) for b in names[i + 1:]}
    assert copies <= pairs, "every pair that shares its code by construction is flagged"
    assert frozenset((next(s.names[0] for s in students if s.lineage == "cs231n" and s.kind == "correct"),
                      copy.names[0])) in pairs                                # the disguised copy
    assert dom.find(id="similar-count").get_text() == str(len(pairs))


def test_report_gradebook_matches_the_csv_and_escapes_names(graded, dom):
    _, out, students, _ = graded
    csv_totals = [(r["student"], r["total"]) for r in _csv(out / "grades.csv")]
    shown = [(r[0].removesuffix(" group"), r[-2]) for r in _table(dom, "gradebook-table")]
    assert [(results.one_line(n), t) for n, t in csv_totals] == shown
    assert not dom.find_all("script") and not dom.find_all(["iframe", "object", "embed"])
    hostile = results.one_line(staff_class.HOSTILE_NAME)
    assert "<script>" in hostile and hostile in dom.get_text()                 # shown as text, bidi visible
    assert all(img["src"].startswith("data:image/png;base64,") for img in dom.find_all("img"))
    facts = dom.find(id="run-facts").get_text(" ", strip=True)
    assert "namespaces (32)" in facts and "graded 32, kept 0" in facts and "sha256" in facts


def test_report_renders_as_a_page(graded, tmp_path):
    from PIL import Image
    _, out, _, _ = graded
    shot = tmp_path / "report.png"
    done = chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", (out / "report.html").as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    image = Image.open(shot).convert("L")
    assert image.size == (1280, 1600)
    assert image.getextrema()[0] < 100 and len(image.getcolors(1 << 16)) > 50    # text and figures, not blank


# --------------------------------------------------------------------------- --only

def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_only_regrades_the_named_student_and_keeps_the_rest(graded, tmp_path):
    """The near-copy's student resubmits (ex1 now the release's stub) and another student's
    files change too; ``--only`` that student: only their result is new, every other row and
    results.json is kept byte for byte, and the summary says one was graded."""
    export, out, students, extensions = graded
    shutil.copytree(export.parent, tmp_path / "class", symlinks=True)
    export, out = tmp_path / "class" / "export", tmp_path / "class" / "marks"
    copy = next(s for s in students if s.kind == "copy")
    other = next(s for s in students if s.lineage == "a_plain" and s.kind == "correct")
    stub = (staff_class.ROOT / "assignments" / "ex1_attention" / "attention.py").read_text()
    (export / copy.folder / "attention.py").write_text(stub)
    (export / other.folder / "attention.py").write_text(stub)            # not named: kept as it was graded
    before = {s.folder: _sha(out / "results" / s.folder / "results.json") for s in students}
    rows_before = {r["student"]: r for r in _csv(out / "grades.csv")}
    assert _batch(export, out, *_options(extensions), "--only", copy.names[0]) == 0
    after = {s.folder: _sha(out / "results" / s.folder / "results.json") for s in students}
    assert {f for f in before if before[f] != after[f]} == {copy.folder}
    rows_after = {r["student"]: r for r in _csv(out / "grades.csv")}
    assert set(rows_after) == set(rows_before)
    assert {n for n in rows_after if rows_after[n] != rows_before[n]} == {copy.names[0]}
    new = _results(out, copy)
    assert Decimal(rows_after[copy.names[0]]["ex1"]) == _dec(results.outcomes_from_json(new)["ex1"].score) < 20
    summary = (out / "summary.md").read_text()
    assert "graded 1 in" in summary and "kept 31 results" in summary and "--only kept 1 result(s)" in summary
    assert _batch(export, out, "--only", "nobody at all") == 2                 # a typo is an error, not a no-op
