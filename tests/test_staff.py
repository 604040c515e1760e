"""The course staff's outputs, piece by piece, without grading anything: exact decimals, the
per-person gradebook, the LMS imports, the late policy, the statistics, the similarity check,
``--only``'s selection and the report's escaping. (A graded class of 32: test_staff_class.py.)"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from autograder import contract, results
from autograder.batching import resume, selection
from autograder.batching.discovery import Entry, Member, discover
from autograder.batching.runner import Row
from autograder.staff import late, lms, options, outputs, stats
from autograder.staff.model import RunFacts, decimal_text, exact
from autograder.staff.similarity import Candidate, find_similar

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DUE = "2026-12-01T23:59:00+01:00"


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _tests(exercise: str, total: float, passed: list[bool], cause: tuple[str, ...] = ()) -> list[dict]:
    """Test entries as results.json holds them: shares of ``total`` (split_total), passed or not."""
    shares = results.split_total(total, [1.0] * len(passed))
    out = []
    for i, (share, ok) in enumerate(zip(shares, passed)):
        entry = {"name": f"{exercise} · test {i}", "score": share if ok else 0.0, "max_score": share,
                 "status": "passed" if ok else "failed", "tags": [exercise], "number": f"{exercise[2:]}.{i}"}
        if cause and not ok:
            entry["extra_data"] = {"cause": list(cause)}
        out.append(entry)
    return out


def _row(name: str, tests: list[dict], *, key: str | None = None, members=(), status="ok", reason="",
         path: Path | None = None, created_at: str = "") -> Row:
    entry = Entry(student=name, key=key or re.sub(r"\W+", "_", name), path=path or Path(f"/nowhere/{name}"),
                  members=list(members), created_at=created_at)
    scores = {ex: round(sum(t["score"] for t in tests if t["tags"] == [ex]), 4)
              for ex in sorted({t["tags"][0] for t in tests})}
    return Row(entry=entry, scores=scores, total=round(sum(scores.values()), 4), status=status, reason=reason,
               tests=tests)


def _exercises(**points: float) -> tuple[contract.Exercise, ...]:
    from dataclasses import replace
    return tuple(replace(contract.BY_ID[ex], points=p) for ex, p in points.items())


# --------------------------------------------------------------------------- exact decimals

@pytest.mark.parametrize("value, text", [(16.6667, "16.6667"), (116.6667, "116.6667"), (20.0, "20"),
                                         (0.0001, "0.0001"), (0.1 + 0.2, "0.3"), (1e-05, "0"), (100, "100")])
def test_decimal_text_is_the_exact_score(value, text):
    assert decimal_text(value) == text
    assert "e" not in decimal_text(value).lower()


def test_a_sixteen_and_two_thirds_total_survives_the_csv_exactly(tmp_path):
    """ex1 worth 50/3 points (16.666…), ex3 worth 100: the stored shares (multiples of 1e-4,
    split_total) come back from grades.csv digit for digit, per test, per exercise and in total
    (`:g` wrote 116.6667 as 116.667)."""
    exercises = _exercises(ex1=float(Fraction(50, 3)), ex3=100.0)
    tests = _tests("ex1", 50 / 3, [True] * 7) + _tests("ex3", 100.0, [True, True, False])
    row = _row("Ada", tests)
    opts = options.Options(per_test=True)
    from autograder import gradebook
    gradebook.write_csv(tmp_path / "grades.csv", [row], exercises, opts)
    (cells,) = _csv(tmp_path / "grades.csv")
    for test in tests:                                          # each test's stored float, exactly
        assert Decimal(cells[test["name"]]) == Decimal(repr(test["score"]))
        assert float(cells[test["name"]]) == test["score"]
    for ex in ("ex1", "ex3"):
        per_test = sum(Decimal(cells[t["name"]]) for t in tests if t["tags"] == [ex])
        assert Decimal(cells[ex]) == per_test == Decimal(repr(row.scores[ex]))
    assert cells["ex1"] == "16.6667"
    assert Decimal(cells["total"]) == Decimal(cells["ex1"]) + Decimal(cells["ex3"]) == Decimal("83.3334")
    assert cells["max_total"] == "116.6667"


# --------------------------------------------------------------------------- the gradebook

def test_a_group_gives_each_member_a_row_with_the_groups_grade(tmp_path):
    members = [Member("Ivan Ivanov", "ivan@uni.example", "S1"), Member("Julia Jones", "julia@uni.example", "S2")]
    row = _row("Ivan Ivanov & Julia Jones", _tests("ex1", 20, [True, False]), members=members)
    solo = _row("Ada", _tests("ex1", 20, [True, True]))
    lms.write_gradebook(tmp_path / "g.csv", outputs.build_view([row, solo], tmp_path, RunFacts(_exercises(ex1=20)),
                                                               options.Options()).lines, _exercises(ex1=20))
    table = _csv(tmp_path / "g.csv")
    assert [(r["student"], r["email"], r["sid"], r["group"], r["total"]) for r in table] == [
        ("Ivan Ivanov", "ivan@uni.example", "S1", "Ivan Ivanov & Julia Jones", "10"),
        ("Julia Jones", "julia@uni.example", "S2", "Ivan Ivanov & Julia Jones", "10"),
        ("Ada", "", "", "", "20")]


def test_gradescope_metadata_keeps_each_member_and_the_submission_time(tmp_path):
    (tmp_path / "submission_7").mkdir()
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_7:\n  :submitters:\n  - :name: Ivan Ivanov\n    :email: ivan@uni.example\n    :sid: '11'\n"
        "  - :name: Julia Jones\n    :email: julia@uni.example\n    :sid: '12'\n"
        "  :created_at: 2026-12-02 04:59:00.123456789 +01:00\n")
    (entry,) = discover(tmp_path).entries
    assert entry.people() == [Member("Ivan Ivanov", "ivan@uni.example", "11"),
                              Member("Julia Jones", "julia@uni.example", "12")]
    assert late.submission_time(entry) == late.SubmissionTime(
        datetime(2026, 12, 2, 3, 59, 0, 123456, tzinfo=timezone.utc), "metadata")


def test_formula_like_names_are_defused_in_every_csv(tmp_path):
    row = _row("=HYPERLINK(\"x\")", _tests("ex1", 20, [True]), members=[Member("=cmd|' /C calc'!A0", "@x", "+1")])
    view = outputs.build_view([row], tmp_path, RunFacts(_exercises(ex1=20)), options.Options())
    lms.write_gradebook(tmp_path / "g.csv", view.lines, view.exercises)
    lms.write_canvas(tmp_path / "c.csv", view.lines, exact(20), assignment_name="-A")
    lms.write_moodle(tmp_path / "m.csv", view.lines, assignment_name="HW")
    for name in ("g.csv", "c.csv", "m.csv"):
        for cells in csv.reader(io.StringIO((tmp_path / name).read_text())):
            assert not any(c[:1] in "=+-@" and c[:1] for c in cells), (name, cells)


# --------------------------------------------------------------------------- LMS imports

def test_canvas_import_file(tmp_path):
    """Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then the
    assignment "Name (id)"; a Points Possible row; a grade by hand (timeout, error) left empty."""
    rows = [_row("Ada Lovelace", _tests("ex1", 20, [True, False]), members=[Member("Ada Lovelace", "ada@u.e", "S1")]),
            _row("Bob", [], status="timeout", reason="took too long", members=[Member("Bob", "bob@u.e", "S2")]),
            _row("Cy", [], status="no files", members=[Member("Cy", "cy@u.e", "S3")])]
    rows[1].scores = rows[2].scores = {"ex1": 0.0}
    view = outputs.build_view(rows, tmp_path, RunFacts(_exercises(ex1=20)), options.Options())
    export = lms.write_canvas(tmp_path / "canvas.csv", view.lines, exact(20), assignment_name="Attention HW",
                              assignment_id="4711")
    lines = list(csv.reader(io.StringIO((tmp_path / "canvas.csv").read_text())))
    assert lines == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention HW (4711)"],
                     ["Points Possible", "", "", "", "", "20"],
                     ["Ada Lovelace", "", "S1", "ada@u.e", "", "10"],
                     ["Bob", "", "S2", "bob@u.e", "", ""],
                     ["Cy", "", "S3", "cy@u.e", "", "0"]]
    assert export.left_out == ("Bob",)
    lms.write_canvas(tmp_path / "new.csv", view.lines, exact(20), assignment_name="Attention HW")
    assert (tmp_path / "new.csv").read_text().splitlines()[0].endswith(",Attention HW")    # a new assignment


def test_moodle_import_file_has_only_rows_it_can_match(tmp_path):
    rows = [_row("Ada", _tests("ex1", 20, [True]), members=[Member("Ada", "ada@u.e", "S1")]),
            _row("No Email", _tests("ex1", 20, [True]))]
    view = outputs.build_view(rows, tmp_path, RunFacts(_exercises(ex1=20)), options.Options())
    export = lms.write_moodle(tmp_path / "moodle.csv", view.lines, assignment_name="HW")
    assert _csv(tmp_path / "moodle.csv") == [{"Email address": "ada@u.e", "ID number": "S1", "Full name": "Ada",
                                             "HW": "20"}]
    assert export.left_out == ("No Email",)


# --------------------------------------------------------------------------- late policy

@pytest.mark.parametrize("text, expected", [
    ("2026-12-01T23:59:00+01:00", datetime(2026, 12, 1, 22, 59, tzinfo=timezone.utc)),
    ("2026-12-01T22:59:00Z", datetime(2026, 12, 1, 22, 59, tzinfo=timezone.utc)),
    ("2026-12-01 22:59:00.000000000 +00:00", datetime(2026, 12, 1, 22, 59, tzinfo=timezone.utc))])
def test_times_are_read_with_their_offset(text, expected):
    assert late.parse_time(text) == expected


@pytest.mark.parametrize("bad", ["2026-12-01T23:59:00", "tomorrow", ""])
def test_a_time_without_offset_is_refused(bad):
    with pytest.raises(late.PolicyError):
        late.parse_time(bad)


def test_penalty_per_started_period():
    penalty = late.Penalty.parse("10%/day")
    assert penalty.percent_for(timedelta(seconds=1)) == 10
    assert penalty.percent_for(timedelta(days=1)) == 10
    assert penalty.percent_for(timedelta(days=1, seconds=1)) == 20
    assert penalty.percent_for(timedelta(days=30)) == 100
    assert late.Penalty.parse("2.5% / 12h").percent_for(timedelta(hours=13)) == Decimal("5.0")
    for bad in ("10/day", "0%/day", "150%/day", "10%/fortnight"):
        with pytest.raises(late.PolicyError):
            late.Penalty.parse(bad)


def test_late_policy_applied(tmp_path):
    (tmp_path / "ext.csv").write_text("email,sid,extra_hours,due\nlate@u.e,,48,\n,S9,,2026-12-10T00:00:00Z\n")
    policy = options.late_policy(DUE, "10%/day", "+72h", str(tmp_path / "ext.csv"))
    due = late.parse_time(DUE)
    raw, top = Decimal("95.5"), Decimal(100)

    def outcome(hours: float, person=Member("x")):
        return late.apply(policy, person, late.SubmissionTime(due + timedelta(hours=hours), "metadata"), raw, top)

    assert outcome(-1).final == raw and not outcome(-1).late
    assert outcome(5).final == Decimal("85.5") and outcome(5).percent == 10           # 10 % of the 100 possible
    assert outcome(49).final == Decimal("65.5")                                       # three started days
    assert outcome(73).final == 0 and outcome(73).cut_off
    extended = outcome(30, Member("Late Larry", "LATE@u.e"))                          # email matched in any case
    assert extended.final == raw and extended.extended and not extended.late
    moved = outcome(24 * 8, Member("Sid", sid="S9"))                                  # a new due date
    assert moved.final == raw and moved.due == datetime(2026, 12, 10, tzinfo=timezone.utc)
    unknown = late.apply(policy, Member("y"), late.SubmissionTime(None, "none"), raw, top)
    assert unknown.final == raw and "unknown" in unknown.describe()


def test_late_policy_options_are_checked(tmp_path):
    with pytest.raises(late.PolicyError, match="need --due"):
        options.late_policy(None, "10%/day")
    with pytest.raises(late.PolicyError, match="before the due date"):
        options.late_policy(DUE, None, "2026-11-01T00:00:00Z")
    (tmp_path / "bad.csv").write_text("name,hours\nA,3\n")
    with pytest.raises(late.PolicyError, match="needs a column due"):
        options.late_policy(DUE, None, None, str(tmp_path / "bad.csv"))
    assert options.late_policy(None) is None


def test_without_metadata_the_time_is_the_newest_file(tmp_path):
    sub = tmp_path / "alice"
    (sub / "deep").mkdir(parents=True)
    (sub / "deep" / "attention.py").write_text("x = 1\n")
    os.utime(sub / "deep" / "attention.py", (2_000_000_000, 2_000_000_000))
    os.utime(sub / "deep", (1_000_000_000, 1_000_000_000))
    os.utime(sub, (1_000_000_000, 1_000_000_000))
    found = late.submission_time(Entry("alice", "alice", sub))
    assert found == late.SubmissionTime(datetime.fromtimestamp(2_000_000_000, tz=timezone.utc), "files")


def test_the_late_policy_reaches_the_gradebook(tmp_path):
    policy = options.late_policy(DUE, "10%/day")
    rows = [_row("On Time", _tests("ex1", 20, [True, True]), created_at="2026-12-01 20:00:00 +01:00"),
            _row("Late", _tests("ex1", 20, [True, True]), created_at="2026-12-02 01:59:00 +01:00")]
    exercises = _exercises(ex1=20)
    view = outputs.build_view(rows, tmp_path, RunFacts(exercises), options.Options(late=policy))
    lms.write_gradebook(tmp_path / "g.csv", view.lines, exercises, late=True)
    table = {r["student"]: r for r in _csv(tmp_path / "g.csv")}
    on_time = table["On Time"]
    assert (on_time["raw_total"], on_time["total"], on_time["late_hours"]) == ("20", "20", "0")
    assert (table["Late"]["raw_total"], table["Late"]["total"]) == ("20", "18")     # 10 % of 20 for 2 h
    assert (table["Late"]["late_hours"], table["Late"]["late_penalty_percent"]) == ("2", "10")
    assert table["Late"]["submitted_from"] == "metadata"


# --------------------------------------------------------------------------- statistics

def test_point_biserial_is_pearsons_r_and_says_when_undefined():
    rng = random.Random(3)
    passed = [rng.random() < 0.6 for _ in range(40)]
    others = [rng.gauss(60 + 15 * p, 10) for p in passed]
    value, why = stats.point_biserial(passed, others)
    assert why == "" and value == pytest.approx(np.corrcoef(np.array(passed, float), others)[0, 1], abs=1e-12)
    assert stats.point_biserial([True, True], [1.0, 2.0]) == (None, "every counted submission passed")
    assert stats.point_biserial([False, False], [1.0, 2.0]) == (None, "every counted submission failed")
    assert stats.point_biserial([True, False], [5.0, 5.0]) == (None, "the other tests' totals do not vary")


def test_item_stats_count_graded_exercises_and_use_the_rest_of_the_total():
    """Ten submissions: test 0 of ex1 failed by nine (90 %: look at it); the missing-ex2
    submission does not count for ex2's tests; separation against the total of the *other* tests."""
    subs = []
    for i in range(10):
        tests = _tests("ex1", 20, [i == 0, True, i < 3]) + _tests("ex2", 20, [i % 2 == 0, True])
        subs.append(_row(f"s{i}", tests))
    from autograder.staff.model import SubmissionView
    views = [SubmissionView(r) for r in subs]
    views[9].outcomes = {"ex1": results.ExerciseOutcome("ex1", results.ExerciseStatus.GRADED),
                         "ex2": results.ExerciseOutcome("ex2", results.ExerciseStatus.MISSING)}
    by_name = {s.name: s for s in stats.item_stats(views)}
    first = by_name["ex1 · test 0"]
    assert (first.passed, first.counted, first.look, first.failed_by[0]) == (1, 10, True, "s1")
    assert by_name["ex2 · test 0"].counted == 9 and not by_name["ex1 · test 2"].look
    rest = [float(v.total) - results.result_score(t) for v in views for t in v.row.tests if t["name"] == "ex1 · test 2"]
    passed = [results.result_passed(t) for v in views for t in v.row.tests if t["name"] == "ex1 · test 2"]
    assert by_name["ex1 · test 2"].separation == pytest.approx(np.corrcoef(np.array(passed, float), rest)[0, 1])
    assert by_name["ex1 · test 1"].separation is None                              # everyone passed
    order = [s.rate for s in stats.item_stats(views)]
    assert order == sorted(order)


def test_misconceptions_name_who_has_them():
    from autograder.staff.model import SubmissionView
    from autograder.suites.ex1_attention.causes import Ex1Cause
    mask = (Ex1Cause.INVERTED_MASK.id, Ex1Cause.MASK_IGNORED.id)      # a test cannot tell them apart
    a = _row("Ann", _tests("ex1", 20, [False, False], cause=mask))
    b = _row("Ben", _tests("ex1", 20, [False, True], cause=mask))
    c = _row("Cat", _tests("ex1", 20, [False, True], cause=(Ex1Cause.NO_SCALE.id,)))
    (first, second) = stats.misconceptions([SubmissionView(r) for r in (a, b, c)])
    assert (first.cause, first.count, first.students, len(first.tests)) == (
        f"{Ex1Cause.INVERTED_MASK.sentence}\n  or: {Ex1Cause.MASK_IGNORED.sentence}", 2, ["Ann", "Ben"], 2)
    assert (second.cause, second.students) == (Ex1Cause.NO_SCALE.sentence, ["Cat"])


def test_bins_show_the_spread():
    assert stats.bin_edges([92, 95.5, 100], 100) == [float(x) for x in range(92, 102)]   # one per point
    assert stats.bin_edges([0, 97, 100], 100) == [float(x) for x in range(0, 102)]
    wide = stats.bin_edges([0, 40, 60, 70, 80, 85, 90, 95, 120, 150], 150)              # Freedman–Diaconis
    widths = {round(b - a, 6) for a, b in zip(wide, wide[1:])}
    assert len(widths) == 1 and widths.pop() in stats.NICE_WIDTHS[3:] and wide[0] <= 0 and wide[-1] > 150


# --------------------------------------------------------------------------- similarity

def _near_copy(source: str) -> str:
    import sys
    sys.path.insert(0, str(TESTS))
    from staff_class import disguise
    return disguise(source)


def test_similarity_flags_the_near_copy_among_independent_submissions(tmp_path):
    """Thirteen independently written correct sets and a disguised copy of one of them: exactly
    that pair is flagged, with the shared regions marked on both sides."""
    import sys
    sys.path.insert(0, str(TESTS))
    from staff_class import CORRECT, EXERCISES, _copy_set
    candidates = []
    for name, source in CORRECT.items():
        _copy_set(source, tmp_path / name)
        candidates.append(Candidate(name, name, tmp_path / name))
    (tmp_path / "copy").mkdir()
    for ex in EXERCISES:
        (tmp_path / "copy" / ex.filename).write_text(_near_copy((tmp_path / "nanogpt" / ex.filename).read_text()))
    candidates.append(Candidate("copy", "Copy Cat", tmp_path / "copy"))
    found = find_similar(candidates, EXERCISES, options.DEFAULT_SIMILARITY)
    assert found.ran and all(found.starter.values()) and found.compared == 14
    assert [(p.key_a, p.key_b) for p in found.pairs] == [("nanogpt", "copy")]
    pair = found.pairs[0]
    assert pair.share > 0.9 and pair.files[0].share > 0.9
    marked = [piece.text for line in pair.files[0].lines_b for piece in line.pieces if piece.shared]
    assert marked and all(p.strip() == "" or p in (tmp_path / "copy" / pair.files[0].filename).read_text()
                          for p in marked)


def test_starter_code_never_makes_two_submissions_alike(tmp_path):
    """Two students who hand in the release's stubs with a line of their own each: not flagged."""
    from staff_class import EXERCISES
    for who, extra in (("a", "\nANSWER = 42\n"), ("b", "\nprint('hello world, this is mine')\n")):
        (tmp_path / who).mkdir()
        for ex in EXERCISES:
            stub = (ROOT / "assignments" / ex.folder / ex.filename).read_text()
            (tmp_path / who / ex.filename).write_text(stub + extra)
    found = find_similar([Candidate("a", "a", tmp_path / "a"), Candidate("b", "b", tmp_path / "b")],
                         EXERCISES, options.DEFAULT_SIMILARITY)
    assert found.ran and found.pairs == []


def test_shown_lines_mark_exactly_the_shared_characters():
    """Each shown line is its text cut into runs, each run marked shared exactly where one of
    copydetect's [starts, ends] slices covers it; unshared lines beyond the context are a gap."""
    from autograder.staff.similarity import CONTEXT_LINES, shown_lines
    lines = [f"line {i} = {i} * 2" for i in range(1, 13)]
    code = "\n".join(lines)
    start = code.index("3 = 3")                      # "3 = 3 * 2\nline 4" shared
    end = code.index(" = 4")
    other = code.index("12 * 2")
    shown = shown_lines(code, [[start, other], [end, other + 2]])
    numbers = [line.number for line in shown if line.number]
    assert numbers == list(range(1, 4 + CONTEXT_LINES + 1)) + list(range(12 - CONTEXT_LINES, 13))
    assert [line.skipped for line in shown if not line.number] == [12 - CONTEXT_LINES - (4 + CONTEXT_LINES) - 1]
    for line in shown:
        if not line.number:
            continue
        text = lines[line.number - 1]
        assert "".join(piece.text for piece in line.pieces) == text
        offset = sum(len(t) + 1 for t in lines[:line.number - 1])
        marks = [any(a <= offset + i < b for a, b in ((start, end), (other, other + 2))) for i in range(len(text))]
        assert [flag for piece in line.pieces for flag in [piece.shared] * len(piece.text)] == marks
        assert all(a.shared != b.shared for a, b in zip(line.pieces, line.pieces[1:]))   # runs, not characters


# --------------------------------------------------------------------------- --only

def test_only_matches_names_emails_sids_and_folders(tmp_path):
    entries = [Entry("Ivan Ivanov & Julia Jones", "submission_1", tmp_path / "submission_1",
                     members=[Member("Ivan Ivanov", "ivan@u.e", "S1"), Member("Julia Jones", "julia@u.e", "S2")]),
               Entry("alice", "alice", tmp_path / "alice.zip")]
    assert selection.chosen(entries, ["JULIA@u.e"]) == {"submission_1"}
    assert selection.chosen(entries, ["S1", "alice.zip"]) == {"submission_1", "alice"}
    assert selection.chosen(entries, ["Alice"]) == {"alice"}
    with pytest.raises(selection.UnknownStudents, match="bob"):
        selection.chosen(entries, ["alice", "bob"])
    assert selection.parse(" a, ,b ") == ["a", "b"]


def test_only_keeps_every_other_result_even_from_another_build(tmp_path):
    (tmp_path / "subs" / "a").mkdir(parents=True)
    (tmp_path / "subs" / "b").mkdir()
    entries = discover(tmp_path / "subs").entries
    settings = {"exercises": ["ex1"], "call_timeout": 20.0}
    for entry in entries:
        folder = tmp_path / "results" / entry.key
        results.write_atomic(folder / "results.json", {"tests": [], "score": 1.0})
        row = Row(entry=entry, scores={"ex1": 1.0}, total=1.0)
        resume.record(folder, "a key of another build", row, "run")
    rows, todo, keys, missing, stale = selection.split(entries, tmp_path / "results", settings,
                                                       lambda e: Row(entry=e), {"a"})
    assert [e.key for e in todo] == ["a"] and set(rows) == {"b"} and stale == ["b"] and missing == []
    assert not (tmp_path / "results" / "a" / resume.MARKER).exists()         # a is regraded: no stale marker
    (tmp_path / "results" / "b" / "results.json").write_text("{}")            # changed since: not kept
    rows, _, _, missing, _ = selection.split(entries, tmp_path / "results", settings, lambda e: Row(entry=e), {"a"})
    assert rows == {} and missing == ["b"]


# --------------------------------------------------------------------------- the report

HOSTILE = "<script>alert(\"x\")</script> O'Brien \u202egnp.exe"


def test_report_escapes_everything_a_submission_wrote(tmp_path):
    """A hostile name, folder name, reason and cause reach the page as text: no element, no
    attribute, the bidi override visible; the page needs no network and has no script."""
    rows = [_row(HOSTILE, _tests("ex1", 20, [False, True], cause=("<img src=x onerror=alert(1)> & \"q\"",)),
                 path=tmp_path / "<b>folder</b>", reason="<i>crashed</i>"),
            _row("Ada", _tests("ex1", 20, [True, True]))]
    facts = RunFacts(_exercises(ex1=20), build_id="<build>", notes=["<u>note</u>"])
    view = outputs.build_view(rows, tmp_path, facts, options.Options(similarity=False))
    written = outputs.write(view, tmp_path / "grades.csv")
    page = written.report.read_text(encoding="utf-8")
    for raw in ("<script", "<img src=x", "<b>folder", "<i>crashed", "<u>note", "<build>", "\u202e"):
        assert raw not in page, raw
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; O&#39;Brien \\u202egnp.exe" in page
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &#34;q&#34;" in page
    assert not re.search(r"(src|href)=\"(?!data:|#)", page)                   # nothing fetched
    assert re.findall(r"<img src=\"data:image/png;base64,", page)


def test_summary_is_short_and_points_to_the_report(tmp_path):
    rows = [_row(f"s{i}", _tests("ex1", 20, [i > 0] + [True] * 30, cause=("c", "d"))) for i in range(12)]
    from autograder import gradebook
    gradebook.write_outputs(tmp_path / "grades.csv", rows, _exercises(ex1=20),
                            facts=RunFacts(_exercises(ex1=20), elapsed=30.0, graded_now=1, kept=11),
                            options=options.Options(similarity=False))
    summary = (tmp_path / "summary.md").read_text()
    assert len(summary.splitlines()) < 60 and "(report.html)" in summary
    assert "\\n" not in summary and "| 1 | ex1 | c / or: d |" in summary
    assert "graded 1 in 30 s with 1 job(s): 2.0 submissions/min; kept 11 results" in summary
    assert re.search(r"mean \d+\.\d\d · median \d+\.\d\d", summary)


def test_staff_options_from_the_command_line(tmp_path):
    from autograder import batch
    parser = argparse.ArgumentParser()
    batch.add_arguments(parser)
    args = parser.parse_args(["subs", "--lms", "Canvas,moodle", "--due", DUE, "--late-penalty", "5%/hour",
                              "--assignment-name", "HW 3", "--per-test"])
    opts = options.from_args(args)
    assert opts.lms == ("canvas", "moodle") and opts.per_test and opts.assignment_name == "HW 3"
    assert opts.late.penalty.percent == 5 and opts.similarity
    with pytest.raises(late.PolicyError, match="unknown format"):
        options.from_args(parser.parse_args(["subs", "--lms", "blackboard"]))
    assert json.dumps(sorted(options.LMS_FORMATS)) == '["canvas", "moodle"]'


def test_the_report_says_which_secret_and_whether_it_was_pinned(monkeypatch):
    from autograder import seeds
    secret = bytes(range(32))
    monkeypatch.setattr(seeds, "load_secret", lambda: (secret, "file"))
    monkeypatch.setattr(outputs, "_build_info", lambda: {"seed_secret_pinned": True})
    facts = outputs.secret_facts()
    assert (facts.origin, facts.pinned) == ("build", True)
    assert facts.sha256_prefix == __import__("hashlib").sha256(secret).hexdigest()[:16]
    assert "pinned (build --seed-secret)" in facts.describe() and secret.hex() not in facts.describe()
    monkeypatch.setattr(outputs, "_build_info", lambda: {})
    assert (outputs.secret_facts().origin, outputs.secret_facts().pinned) == ("checkout", None)


def test_a_weaker_isolation_level_needs_a_look(tmp_path):
    rows = [_row(name, _tests("ex1", 20, [True])) for name in ("Ada", "Bob", "Cy")]
    rows[0].isolation = rows[1].isolation = "namespaces"
    rows[2].isolation = "process"
    from autograder.staff.analysis import needs_a_look
    view = outputs.build_view(rows, tmp_path, RunFacts(_exercises(ex1=20)), options.Options(similarity=False))
    (only,) = needs_a_look(view)
    assert only.student == "Cy" and "process isolation level" in only.reasons[0]


FAKE_GRADER = '''#!{python}
import json, sys
from autograder.suites.ex1_attention.causes import Ex1Cause
job = json.load(open(sys.argv[sys.argv.index("--job") + 1]))
score = float(open(job["submission"] + "/score.txt").read())
test = {{"name": "ex1 · t", "score": score, "max_score": 20.0, "status": "passed" if score == 20 else "failed",
         "tags": ["ex1"]}}
json.dump({{"score": score, "tests": [test], "extra_data": {{"exercises": [
    {{"exercise": "ex1", "status": "graded", "score": score, "max_score": 20.0}}]}}}}, open(job["results"], "w"))
'''


def test_batch_only_regrades_the_named_and_keeps_the_rest(tmp_path):
    """With a stand-in grader (a score read from the submission): ``--only a`` regrades a,
    keeps b's earlier result although b's files changed since (the summary says so), and a
    student with no earlier result gets an error row, not a grade."""
    import sys
    from autograder import batch
    fake = tmp_path / "python"
    fake.write_text(FAKE_GRADER.format(python=sys.executable))
    fake.chmod(0o755)
    subs, out = tmp_path / "subs", tmp_path / "out" / "grades.csv"
    for name, score in (("a", "5"), ("b", "20")):
        (subs / name).mkdir(parents=True)
        (subs / name / "score.txt").write_text(score)
    exercises = _exercises(ex1=20)

    def run(only=None):
        batch.run_batch(subs, out, exercises, jobs=1, progress=False, python=str(fake), warm=False, only=only,
                        options=options.Options(similarity=False))
        return {r["student"]: (r["total"], r["status"], r["reason"]) for r in _csv(out)}

    assert run() == {"a": ("5", "ok", ""), "b": ("20", "ok", "")}
    (subs / "a" / "score.txt").write_text("7")
    (subs / "b" / "score.txt").write_text("9")
    assert run(["A"]) == {"a": ("7", "ok", ""), "b": ("20", "ok", "")}
    summary = (out.parent / "summary.md").read_text()
    assert "graded 1 in" in summary and "kept 1 results" in summary and "--only kept 1 result(s)" in summary
    (subs / "c").mkdir()
    (subs / "c" / "score.txt").write_text("20")
    table = run(["a"])
    assert table["c"] == ("0", "error", selection.NO_EARLIER_RESULT) and table["b"][0] == "20"
    with pytest.raises(selection.UnknownStudents):
        run(["d"])


def test_report_imports_load_in_background_and_a_failure_waits_for_the_first_figure(monkeypatch):
    """A batch imports pyplot on a thread while the class is graded; if that fails, the thread
    ends quietly and the report's first figure (which imports it again) raises the error."""
    import sys
    import threading
    from autograder.staff import figures
    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    figures.load_in_background().join()
    assert "matplotlib.pyplot" in sys.modules and not raised

    def broken():
        raise ImportError("no pyplot here")
    monkeypatch.setattr(figures, "_pyplot", broken)
    figures.load_in_background().join()
    assert not raised
    with pytest.raises(ImportError, match="no pyplot here"):
        figures.histogram_png([1.0, 2.0], 10.0, "scores")
