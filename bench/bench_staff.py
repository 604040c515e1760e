"""Benchmark what the course staff's outputs add to a batch: report.html, the LMS imports, the
late policy and the similarity check, on the 32-submission class of ``tests/staff_class.py``.

    .venv/bin/python bench/bench_staff.py [--repeat 3] [--graded DIR] [--worker-user ag-bench]

Builds the class (a Gradescope export) and grades it once with ``batch --jobs 2`` (timed, for
scale; ``--graded DIR`` reuses a folder this bench graded before), then, ``--repeat`` times
each, writes:

* ``csv only``: ``grades.csv`` alone (what every batch writes anyway);
* ``all outputs``: what ``batch`` writes after grading with every staff option on
  (``gradebook.write_outputs``: grades.csv with per-test and late columns, canvas.csv,
  moodle.csv, summary.md, histogram.png, report.html with the similarity check);

and reports the medians, what the staff outputs add (the difference), and the parts of one
more run (similarity, report, figures).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import staff_class  # noqa: E402  (tests/staff_class.py: the class)

from autograder import contract, gradebook  # noqa: E402
from autograder.batching import runner, selection  # noqa: E402
from autograder.batching.discovery import discover  # noqa: E402
from autograder.batching.runner import Row  # noqa: E402
from autograder.cli import main  # noqa: E402
from autograder.staff import analysis, options, outputs, report  # noqa: E402


def grade(folder: Path, worker_user: str) -> tuple[Path, Path, float]:
    export, students = staff_class.build(folder)
    extensions = staff_class.write_extensions(folder / "extensions.csv", students)
    runner.WORKER_USER = worker_user
    started = time.perf_counter()
    code = main(["batch", str(export), "--out", str(folder / "marks" / "grades.csv"), "--jobs", "2",
                 "--no-progress", "--no-similarity"])
    if code != 0:
        raise SystemExit(f"batch failed ({code})")
    return export, extensions, time.perf_counter() - started


def rows_of(export: Path, out: Path) -> tuple[list, object]:
    """The graded rows, as a batch that keeps them all sees them."""
    found = discover(export)
    settings = {"exercises": [ex.id for ex in contract.DEFAULT], "call_timeout": 20.0}
    kept, todo, _, missing, _ = selection.split(found.entries, out / "results", settings, lambda e: Row(entry=e), set())
    if todo or missing:
        raise SystemExit(f"{out} is not a graded class ({len(missing)} without a result)")
    return [kept[e.key] for e in found.entries], found


def staff_options(extensions: Path) -> options.Options:
    policy = options.late_policy(staff_class.DUE.isoformat(), staff_class.PENALTY, staff_class.CUTOFF,
                                 str(extensions))
    return options.Options(late=policy, lms=options.LMS_FORMATS, per_test=True)


def timed(action, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


def parts(rows, found, out: Path, opts: options.Options) -> dict[str, float]:
    facts = outputs.run_facts(contract.DEFAULT, found=found)
    view = outputs.build_view(rows, out, facts, opts)
    took = {}
    started = time.perf_counter()
    analysed = analysis.analyse(view)
    took["analysis (statistics + similarity)"] = time.perf_counter() - started
    started = time.perf_counter()
    analysed.similarity = analysis.similar(view)
    took["  of which similarity"] = time.perf_counter() - started
    started = time.perf_counter()
    report.distributions(view)
    took["report figures"] = time.perf_counter() - started
    started = time.perf_counter()
    report.write(view, analysed)
    took["report.html (figures + template)"] = time.perf_counter() - started
    return took


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--graded", type=Path, default=None, help="a folder this bench graded before")
    parser.add_argument("--worker-user", default="ag-bench")
    args = parser.parse_args()
    folder = args.graded or Path(tempfile.mkdtemp(prefix="bench-staff-"))
    if args.graded is None:
        export, extensions, seconds = grade(folder, args.worker_user)
        print(f"graded {folder / 'export'}: {seconds:.1f} s with 2 jobs (load {os.getloadavg()[0]:.2f})")
    else:
        export, extensions = folder / "export", folder / "extensions.csv"
    out = folder / "marks"
    rows, found = rows_of(export, out)
    opts = staff_options(extensions)
    facts = outputs.run_facts(contract.DEFAULT, found=found)
    bench = out / "bench"
    bench.mkdir(exist_ok=True)
    for name in ("results",):
        link = bench / name
        if not link.exists():
            link.symlink_to(out / name)
    csv_only = timed(lambda: gradebook.write_csv(bench / "grades.csv", rows, contract.DEFAULT), args.repeat)
    everything = timed(lambda: gradebook.write_outputs(bench / "grades.csv", rows, contract.DEFAULT, facts=facts,
                                                       options=opts, found=found), args.repeat)
    print(f"{len(rows)} submissions, {args.repeat} runs each, load {os.getloadavg()[0]:.2f}")
    for what, times in (("csv only", csv_only), ("all outputs", everything)):
        print(f"  {what:12s}  median {statistics.median(times):6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    print(f"  staff outputs add {statistics.median(everything) - statistics.median(csv_only):.2f} s (median)")
    for what, seconds in parts(rows, found, bench, opts).items():
        print(f"    {what:38s} {seconds:6.2f} s")
    print(f"report: {bench / 'report.html'} ({(bench / 'report.html').stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main_bench()
