"""What a batch leaves for the TAs: the gradebook, ``summary.md``, ``histogram.png`` and
``report.html`` (:func:`write_outputs`; the staff outputs themselves live in
:mod:`autograder.staff`).

* ``grades.csv``: one row per person (a group's members each get the group's grade, their
  own email and SID): ``student, email, sid, submission, group, ex1 … exN`` (``--per-test``:
  then one column per test), the late policy's columns when there is one, ``total,
  max_total, status, reason``; exact scores (:mod:`autograder.staff.lms`). ``status`` is
  ``ok``, ``no files``, ``timeout`` or ``error``; a row that is not ``ok`` keeps only the
  exercises graded before the grader stopped (often none) and ``reason`` says why. Every cell
  that comes from a submission (names, folder names, reasons) is one line: line breaks and
  control characters are shown as escapes; a folder name that is not UTF-8 shows each
  undecodable byte as ``\\xNN`` and a backslash as ``\\\\`` (reversible:
  :func:`autograder.textsafe.name_bytes`).
* ``summary.md``: short: counts, score statistics, the submissions that need a human, the
  tests to look at, the most common misconceptions, and a pointer to ``report.html``.
* ``histogram.png``: the distribution of totals, bins over the observed range
  (:func:`autograder.staff.stats.bin_edges`).
* ``report.html``: the class report (:mod:`autograder.staff.report`); ``canvas.csv`` /
  ``moodle.csv`` with ``--lms``.
"""
from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Sequence

from autograder import contract, textsafe
from autograder.results import one_line
from autograder.staff import figures, outputs
from autograder.staff import stats as staff_stats
from autograder.staff.model import RunFacts, decimal_text, exact
from autograder.staff.options import Options

TOP_MISCONCEPTIONS = 5
TOP_TESTS = 10


def write_outputs(out_csv: Path, rows: Sequence, exercises: Sequence[contract.Exercise], *,
                  facts: RunFacts | None = None,
                  options: Options | None = None, found=None, similarity=None) -> outputs.Written:
    """Everything a batch writes next to its CSV, from its rows (in class order);
    ``similarity``: the check started while they were graded (``staff.analysis.start_similar``)."""
    out_csv = Path(out_csv)
    facts = facts or outputs.run_facts(tuple(exercises), found=found)
    view = outputs.build_view(rows, out_csv.parent, facts, options or Options())
    written = outputs.write(view, out_csv, similarity)
    write_summary(written, csv_name=out_csv.name)
    write_histogram(out_csv.parent / "histogram.png", [float(s.total) for s in view.graded], float(facts.max_total))
    return written


def write_csv(path: Path, rows: Sequence, exercises: Sequence[contract.Exercise],
              options: Options | None = None) -> None:
    """``grades.csv`` alone (one row per person, exact scores; no late policy unless given)."""
    from autograder.staff import lms

    facts = RunFacts(exercises=tuple(exercises))
    view = outputs.build_view(rows, Path(path).parent, facts, options or Options())
    lms.write_gradebook(Path(path), view.lines, view.exercises, per_test=view.options.per_test,
                        late=view.options.late is not None)


# --------------------------------------------------------------------------- statistics

def misconceptions(rows: Sequence) -> list[tuple[str, str, int]]:
    """``(exercise, cause, submissions)`` for the failures' likely causes (each test's
    ``extra_data.cause``, written by the grading plugin), most common first."""
    from autograder.staff.model import SubmissionView

    return [(m.exercise, m.cause, m.count) for m in staff_stats.misconceptions([SubmissionView(r) for r in rows])]


def _stats(values: Sequence[float]) -> str:
    if not values:
        return "–"
    return (f"mean {statistics.fmean(values):.2f} · median {statistics.median(values):.2f} · "
            f"min {min(values):.2f} · max {max(values):.2f}")


_MARKDOWN_SPECIAL = re.compile(r"([\\<>\[\]|])")


def _md(text: object) -> str:
    """Text for a Markdown table cell: one line; backslashes, ``<``, ``>``, brackets and
    ``|`` backslash-escaped, backticks made quotes (a name cannot become HTML, a link, a code
    span or a column)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text, 500)).replace("`", "'")


def _md_code(text: object) -> str:
    """Text inside a code span in a table cell: one line, ``|`` escaped, backticks made quotes."""
    return one_line(text, 500).replace("|", "\\|").replace("`", "'")


def _md_lines(text: object) -> str:
    """Multi-line text (a cause with "or:" alternatives) on one Markdown line: its lines joined by " / "."""
    parts = [part.strip() for part in textsafe.text(text).split("\n") if part.strip()]
    return _md(" / ".join(parts))


# --------------------------------------------------------------------------- files

def write_summary(written: outputs.Written, *, csv_name: str = "grades.csv") -> None:
    """``summary.md``: short; the details are in ``report.html``."""
    view, analysis, facts = written.view, written.analysis, written.view.facts
    rows = [s.row for s in view.submissions]
    graded = view.graded
    lines = ["# Batch grading summary", ""]
    timing = (f"graded {facts.graded_now} in {facts.elapsed:.0f} s with "
              f"{facts.scheduler and 'a Dask cluster' or f'{facts.jobs} job(s)'}"
              + (f": {facts.rate_per_minute:.1f} submissions/min" if facts.graded_now else ""))
    if facts.kept:
        timing += f"; kept {facts.kept} results from an earlier run"
    lines += [f"{len(rows)} submissions ({len(graded)} graded, {len(rows) - len(graded)} with problems); "
              f"{timing}. Gradebook: `{csv_name}` ({len(view.lines)} students); per-student "
              "`results/<student>/results.json`.", "",
              "**Full report: [`report.html`](report.html)** (open it in a browser): score distributions per "
              "exercise, every test's pass rate and separation, misconceptions and who has them, similar "
              "submissions, the late policy, the run's facts.", ""]
    if facts.gradescope:
        lines += ["Input: a Gradescope export (`submission_metadata.yml`).", ""]
    for note in facts.notes:
        lines += [f"Note: {_md(note)}", ""]
    if facts.ignored:
        lines += ["Ignored (not a folder or .zip): " + ", ".join(f"`{_md_code(n)}`" for n in facts.ignored), ""]

    totals = [float(s.total) for s in graded]
    lines += ["## Scores", "", f"Total of the graded (out of {decimal_text(facts.max_total)}): {_stats(totals)}", "",
              "| exercise | out of | mean | median | full marks | zero |", "|---|---|---|---|---|---|"]
    for ex in view.exercises:
        vals = [float(s.score(ex.id)) for s in graded]
        if vals:
            lines.append(f"| {ex.id} {_md(ex.title)} | {decimal_text(ex.points)} | {statistics.fmean(vals):.2f} | "
                         f"{statistics.median(vals):.2f} | {sum(v >= float(exact(ex.points)) for v in vals)} | "
                         f"{sum(v == 0 for v in vals)} |")
    lines += ["", "![Score histogram](histogram.png)", ""]

    lines += ["## Submissions that need a look", ""]
    if analysis.attention:
        lines += ["| student | submission | status | reason |", "|---|---|---|---|"]
        lines += [f"| {_md(a.student)} | `{_md_code(a.submission)}` | {a.status} | {_md('; '.join(a.reasons))} |"
                  for a in analysis.attention]
    else:
        lines.append("None: every submission was graded and had every file.")
    lines.append("")

    look = analysis.look
    lines += ["## Tests to look at", ""]
    if look:
        lines += [f"Failed by at least {staff_stats.LOOK_SHARE:.0%} of the submissions they judged:", ""]
        lines += [f"- {_md(t.name)} ({t.passed}/{t.counted} passed)" for t in look[:TOP_TESTS]]
        if len(look) > TOP_TESTS:
            lines.append(f"- … and {len(look) - TOP_TESTS} more in report.html")
    else:
        lines.append("None.")
    lines.append("")

    lines += ["## Most common misconceptions", "",
              "The likely causes the failures named; each counted once per submission.", ""]
    if analysis.misconceptions:
        lines += ["| submissions | exercise | likely cause |", "|---|---|---|"]
        lines += [f"| {m.count} | {m.exercise} | {_md_lines(m.cause)} |"
                  for m in analysis.misconceptions[:TOP_MISCONCEPTIONS]]
        if len(analysis.misconceptions) > TOP_MISCONCEPTIONS:
            more = len(analysis.misconceptions) - TOP_MISCONCEPTIONS
            lines.append(f"\n{more} more, and who has each, in report.html.")
    else:
        lines.append("No failure named a known mistake.")
    lines.append("")
    similarity = analysis.similarity
    if similarity.ran:
        lines += ["## Similar submissions", "",
                  f"{len(similarity.pairs)} pair(s) flagged for a human to look at (advisory: no grade changes); "
                  "side by side in report.html.", ""]
    for export in analysis.exports:
        lines += [f"{export.lms.capitalize()} import: `{export.path.name}` ({export.rows} rows"
                  + (f"; {len(export.left_out)} without a grade" if export.left_out else "") + ").", ""]
    (Path(view.out_dir) / "summary.md").write_text("\n".join(lines), encoding="utf-8")


def write_histogram(path: Path, totals: Sequence[float], max_total: float) -> None:
    """The distribution of totals (the report's total histogram, as a file)."""
    Path(path).write_bytes(figures.histogram_png(list(totals), max_total,
                                                 f"Score distribution · {len(totals)} graded submissions"))
