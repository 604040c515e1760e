"""One `grade` command, timed in two or more kits in interleaved pairs: for changes of a few
tenths of a second, which ``bench_speed.py``'s three runs per kit cannot tell from this
machine's drift (±30 % between hours, ±10 % between minutes).

    .venv/bin/python bench/ab_grade.py --kit OLD --kit NEW [--pairs 8] [--exercises ex1] [SUBMISSION]

Each kit is a folder holding ``autograder/`` and ``reference/`` (this checkout, a ``git
worktree`` of an older commit), run with this venv's Python; byte-compile them first
(``python -m compileall -q autograder reference``) so no kit pays for compiling. Round by
round, every kit grades ``SUBMISSION`` (default: this checkout's ``solutions/``) once, in
kit order, so a busy stretch slows each kit alike. It prints, per kit, the median and the
minimum of the whole process's wall time and the median of its CPU time (user + system of
the process and the children it waited for: the grader, its zygote and workers), and checks
that every kit gave the same score.

``--batch N`` times ``batch SUBMISSION --jobs N`` instead (``SUBMISSION`` a class folder, e.g.
``bench_speed.make_class``'s; ``--class`` builds that one: 8 solutions, 2 stubs, 2 mutants), and
checks that every kit gave the same gradebook totals; ``--pss`` also samples the peak PSS of the
batch and everything it started every 20 ms (the sampling takes CPU: time without it).
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import resource
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_speed import _env, _timed  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def grade_round(kits: list[Path], submission: Path, exercises: str | None, work: Path) -> list[dict]:
    """One grading per kit, in order: wall, CPU and score of each."""
    out = []
    for i, kit in enumerate(kits):
        results = work / f"results-{i}.json"
        cmd = [sys.executable, "-m", "autograder", "grade", str(submission), "--results", str(results)]
        cmd += ["--exercises", exercises] if exercises else []
        before = _children_cpu()
        wall, _ = _timed(cmd, work, _env(kit))
        out.append({"wall": wall, "cpu": _children_cpu() - before,
                    "score": json.loads(results.read_text())["score"]})
    return out


def batch_round(kits: list[Path], class_folder: Path, jobs: int, work: Path, pss: bool) -> list[dict]:
    """One ``batch --jobs`` per kit, in order: wall, CPU, peak PSS and the gradebook's totals."""
    out = []
    for i, kit in enumerate(kits):
        grades = work / f"batch-{i}" / "grades.csv"
        shutil.rmtree(grades.parent, ignore_errors=True)          # no results to resume from
        cmd = [sys.executable, "-m", "autograder", "batch", str(class_folder), "--jobs", str(jobs),
               "--no-progress", "--out", str(grades)]
        before = _children_cpu()
        wall, peak = _timed(cmd, work, _env(kit), pss)
        with open(grades, newline="") as handle:
            totals = tuple(row["total"] for row in csv.DictReader(handle))
        out.append({"wall": wall, "cpu": _children_cpu() - before, "peak_mb": peak, "score": totals})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/ab_grade.py")
    parser.add_argument("submission", nargs="?", default=str(ROOT / "solutions"))
    parser.add_argument("--kit", action="append", required=True, help="a kit folder (twice or more)")
    parser.add_argument("--pairs", type=int, default=8, help="rounds (each kit grades once per round)")
    parser.add_argument("--exercises", default=None)
    parser.add_argument("--batch", type=int, default=0, metavar="N", help="time `batch --jobs N` of a class folder")
    parser.add_argument("--pss", action="store_true", help="with --batch: sample the peak PSS")
    parser.add_argument("--class", dest="make_class", action="store_true",
                        help="with --batch: grade bench_speed's class of 12 (built in a scratch folder)")
    args = parser.parse_args()
    kits = [Path(k).resolve() for k in args.kit]
    if len(kits) < 2:
        parser.error("give --kit at least twice")
    rows: list[list[dict]] = [[] for _ in kits]
    with tempfile.TemporaryDirectory(prefix="ab-grade-") as tmp:
        submission = Path(args.submission).resolve()
        if args.batch and args.make_class:
            from bench_speed import make_class
            submission = Path(tmp) / "class"
            make_class(submission)
        for _ in range(args.pairs):
            done = (batch_round(kits, submission, args.batch, Path(tmp), args.pss) if args.batch
                    else grade_round(kits, submission, args.exercises, Path(tmp)))
            for row, run in zip(rows, done):
                row.append(run)
    scores = {run["score"] for row in rows for run in row}
    for kit, row in zip(kits, rows):
        walls, cpus = [r["wall"] for r in row], [r["cpu"] for r in row]
        peak = f", peak PSS median {statistics.median(r['peak_mb'] for r in row):.0f} MB" if args.pss else ""
        print(f"{kit}: wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}), "
              f"CPU median {statistics.median(cpus):.2f} s{peak}, over {len(row)} runs")
    if len(scores) != 1:
        print(f"the kits disagree on the score: {sorted(scores)}")
        return 1
    score = scores.pop()
    print(f"totals {', '.join(score)} in every run" if args.batch else f"score {score:g} in every run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
