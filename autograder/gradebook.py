"""What a batch leaves for the TAs: the gradebook CSV, ``summary.md`` and ``histogram.png``.

* ``grades.csv``: one row per submission: ``student, email, sid, submission, ex1 … exN,
  total, max_total, status, reason``. ``status`` is ``ok``, ``no files``, ``timeout`` or
  ``error``; a row that is not ``ok`` keeps only the exercises graded before the grader stopped
  (often none) and ``reason`` says why. Every cell that comes from a submission (names, folder
  names, reasons) is one line: line breaks and control characters are shown as escapes; a
  folder name that is not UTF-8 shows each undecodable byte as ``\\xNN`` and a backslash as
  ``\\`` (reversible: :func:`autograder.textsafe.name_bytes`).
* ``summary.md``: score statistics, submissions that need a human, per-test pass rates
  (hardest first) and the most common misconceptions (each failed test's ``extra_data.cause``,
  counted once per submission).
* ``histogram.png``: the distribution of totals (matplotlib, Agg backend).
"""
from __future__ import annotations

import csv
import statistics
from collections import Counter
from pathlib import Path
from typing import Sequence

from autograder import contract, textsafe
from autograder.results import one_line

TOP_MISCONCEPTIONS = 15


def write_csv(path: Path, rows: Sequence, exercises: Sequence[contract.Exercise]) -> None:
    header = ["student", "email", "sid", "submission", *(ex.id for ex in exercises),
              "total", "max_total", "status", "reason"]
    max_total = round(sum(ex.points for ex in exercises), 4)
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for r in rows:
            writer.writerow([_cell(r.entry.student), _cell(r.entry.email), _cell(r.entry.sid),
                             _cell(textsafe.name(r.entry.path.name, None)),
                             *(f"{r.scores.get(ex.id, 0.0):g}" for ex in exercises),
                             f"{r.total:g}", f"{max_total:g}", r.status, _cell(r.reason)])
    tmp.replace(path)


# --------------------------------------------------------------------------- statistics

def pass_rates(rows: Sequence) -> list[tuple[str, int, int]]:
    """``(test name, passed, graded)`` over the graded submissions, lowest pass rate first."""
    passed: Counter = Counter()
    seen: Counter = Counter()
    order: dict[str, int] = {}
    for r in rows:
        if r.status != "ok":
            continue
        for t in r.tests:
            name = str(t.get("name", "?"))
            order.setdefault(name, len(order))
            seen[name] += 1
            passed[name] += t.get("status") == "passed"
    return sorted(((n, passed[n], seen[n]) for n in seen),
                  key=lambda x: (x[1] / x[2], order[x[0]]))


def misconceptions(rows: Sequence) -> list[tuple[str, str, int]]:
    """``(exercise, cause, submissions)`` for the failures' likely causes (each test's
    ``extra_data.cause``: the ids the grading plugin wrote, one cause or several a test cannot
    tell apart), most common first; a cause is shown as its sentence (several joined by "or")."""
    counts: Counter = Counter()
    for r in rows:
        hints = set()
        for t in r.tests:
            if t.get("status") == "passed":
                continue
            tags = t.get("tags") or ["?"]
            extra = t.get("extra_data")
            named = extra.get("cause") if isinstance(extra, dict) else None
            if isinstance(named, list) and named and all(isinstance(c, str) for c in named):
                hints.add((str(tags[0]), tuple(named)))
        counts.update(hints)
    return [(ex, _cause_text(ids), n) for (ex, ids), n in
            sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))]


def _cause_text(cause_ids: tuple[str, ...]) -> str:
    from autograder.diagnosis.causes import text_of_ids

    return text_of_ids(cause_ids).replace("\n  or: ", " or: ")


def _stats(values: Sequence[float]) -> str:
    if not values:
        return "–"
    return (f"mean {statistics.fmean(values):.1f} · median {statistics.median(values):g} · "
            f"min {min(values):g} · max {max(values):g}")


def _cell(text: object) -> str:
    """One CSV cell: one line, and never a formula for a spreadsheet (=, +, -, @ first)."""
    text = one_line(text, 500)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _md(text: object) -> str:
    """Text for a Markdown table cell (also inside a code span): one line, ``|`` escaped,
    backticks made quotes."""
    return one_line(text, 500).replace("|", "\\|").replace("`", "'")


# --------------------------------------------------------------------------- files

def write_summary(out_dir: Path, rows: Sequence, exercises: Sequence[contract.Exercise], *,
                  found=None, elapsed: float = 0.0, jobs: int = 1, csv_name: str = "grades.csv") -> None:
    out_dir = Path(out_dir)
    max_total = round(sum(ex.points for ex in exercises), 4)
    totals = [r.total for r in rows]
    graded = [r for r in rows if r.status == "ok"]
    lines = ["# Batch grading summary", ""]
    rate = len(rows) / elapsed * 60 if elapsed > 0 else 0.0
    lines += [f"{len(rows)} submissions ({len(graded)} graded, {len(rows) - len(graded)} with "
              f"problems) in {elapsed:.0f} s with {jobs} job(s): {rate:.1f} submissions/min. "
              f"Gradebook: `{csv_name}`; per-student `results/<student>/results.json`.", ""]
    if found is not None and found.gradescope:
        lines += ["Input: a Gradescope export (`submission_metadata.yml`).", ""]
    for note in getattr(found, "notes", []) or []:
        lines += [f"Note: {_md(note)}", ""]
    if getattr(found, "ignored", None):
        lines += ["Ignored (not a folder or .zip): " + ", ".join(f"`{_md(n)}`" for n in found.ignored), ""]

    lines += ["## Scores", "", f"Total (out of {max_total:g}): {_stats(totals)}", "",
              "| exercise | out of | mean | median | full marks | zero |", "|---|---|---|---|---|---|"]
    for ex in exercises:
        vals = [r.scores.get(ex.id, 0.0) for r in rows]
        if vals:
            lines.append(f"| {ex.id} {_md(ex.title)} | {ex.points:g} | {statistics.fmean(vals):.1f} | "
                         f"{statistics.median(vals):g} | {sum(v >= ex.points - 1e-9 for v in vals)} | "
                         f"{sum(v == 0 for v in vals)} |")
    lines += ["", "![Score histogram](histogram.png)", ""]

    problems = [r for r in rows if r.status != "ok" or r.reason]
    lines += ["## Submissions that need a look", ""]
    if problems:
        lines += ["| student | submission | status | reason |", "|---|---|---|---|"]
        lines += [f"| {_md(r.entry.student)} | `{_md(textsafe.name(r.entry.path.name, None))}` | {r.status} | {_md(r.reason)} |"
                  for r in problems]
    else:
        lines.append("None: every submission was graded and had every file.")
    lines.append("")

    lines += ["## Most common misconceptions", "",
              "The likely causes the failures named; each counted once per submission.", ""]
    found_hints = misconceptions(rows)[:TOP_MISCONCEPTIONS]
    if found_hints:
        lines += ["| submissions | exercise | likely cause |", "|---|---|---|"]
        lines += [f"| {n} | {ex} | {_md(hint)} |" for ex, hint, n in found_hints]
    else:
        lines.append("No failure named a known mistake.")
    lines.append("")

    lines += ["## Pass rate per test", "", f"Over the {len(graded)} graded submissions, hardest first.", "",
              "| passed | rate | test |", "|---|---|---|"]
    lines += [f"| {p}/{n} | {p / n:.0%} | {_md(name)} |" for name, p, n in pass_rates(rows)]
    lines.append("")
    (out_dir / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    write_histogram(out_dir / "histogram.png", totals, max_total)


def write_histogram(path: Path, totals: Sequence[float], max_total: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    top = max(max_total, max(totals, default=0.0)) or 1.0
    bins = np.linspace(0.0, top, 11)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    try:
        counts, edges, bars = ax.hist(totals, bins=bins, color="#4C72B0", edgecolor="white")
        for count, patch in zip(counts, bars):
            if count:
                ax.annotate(f"{int(count)}", (patch.get_x() + patch.get_width() / 2, count),
                            ha="center", va="bottom", fontsize=9, xytext=(0, 2),
                            textcoords="offset points")
        title = f"Score distribution · {len(totals)} submissions"
        if totals:
            mean = float(np.mean(totals))
            ax.axvline(mean, color="#C44E52", linestyle="--", linewidth=1.5)
            title += f" · mean {mean:.1f} (dashed)"
        ax.set_xticks(edges)
        ax.set_xticklabels([f"{e:g}" for e in edges])
        ax.set_xlim(0, top)
        ax.set_ylim(0, max(1.0, float(max(counts, default=0))) * 1.18)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(f"total score (out of {max_total:g})")
        ax.set_ylabel("submissions")
        ax.set_title(title)
        ax.spines[["top", "right"]].set_visible(False)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
