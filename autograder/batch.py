"""`python -m autograder batch SUBMISSIONS_DIR`: grade a whole class, one subprocess per student.

Input: one sub-folder or ``.zip`` per student, or Gradescope's "Export Submissions" folder
(``submission_metadata.yml`` plus one ``submission_<id>/`` folder per submission; names and
emails come from the metadata when PyYAML is installed, else the folder names are used).

Each student is graded by ``python -m autograder grade --job <stage>/<job key>.json`` (the
paths, ``<out>/results/<student>/results.json`` among them, are in that root-owned 0600 file:
no student name in any command line) in its own subprocess (own session), so a broken or
hostile submission can never stop the batch: a grader that exits with an error, writes no
results or runs past ``--student-timeout`` becomes a zero row with the reason, and its
``results.json`` says so. ``--jobs N`` subprocesses run at once, with a progress bar.

Neighbours (:mod:`autograder.jobs`): each job grades a private copy of its submission (a
root-owned 0700 folder, copied without following links, size-capped); the class folder and
the output folder are hidden from the worker (namespaces level); at the user level the batch
closes the class and output folders to group and others for the batch's duration and puts their
exact modes back when it ends (:class:`autograder.jobs.KeptModes`; the summary says so); at the
process level (not root) they can. Each job runs in its own memory cgroup where the machine has one (one submission's memory
use cannot get another's worker killed), else each worker's memory limit is a share of what is
available.

Output (next to ``--out``, default ``grades.csv``): the gradebook CSV, ``results/<student>/``
(``results.json`` and ``grade.log``), ``summary.md`` and ``histogram.png``
(:mod:`autograder.gradebook`).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from autograder import contract, results
from autograder import jobs as private_jobs
from autograder.batching import cluster, interrupt_on_termination, resume
from autograder.batching.discovery import Discovery, discover
from autograder.batching.runner import Row, Runner
from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT, WORKER_USER

# Grading one submission (the subprocess, its timeout, its row): autograder/batching/runner.py.


# --------------------------------------------------------------------------- the batch

def run_batch(submissions: Path, out_csv: Path, exercises: tuple[contract.Exercise, ...] = contract.DEFAULT,
              *, jobs: int = 1, call_timeout: float = DEFAULT_CALL_TIMEOUT, student_timeout: float = 600.0,
              progress: bool | None = None, python: str | None = None, scheduler: str | None = None,
              job_memory_mb: int | None = None, isolation: str | None = None,
              warm: bool = True) -> tuple[list[Row], Discovery]:
    """Grade every submission; write the CSV, results/, summary.md and histogram.png."""
    from tqdm import tqdm

    from autograder import gradebook

    found = discover(submissions)
    out_csv = Path(out_csv).resolve()
    out_dir = out_csv.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    hide = [str(Path(submissions).resolve()), str(found.entries[0].path.parent.resolve())] if found.entries \
        else [str(Path(submissions).resolve())]
    link = cluster.connect(scheduler) if scheduler else None      # Dask (batching/cluster.py)
    jobs = link.in_flight(jobs) if link else jobs
    runner = Runner(out_dir, exercises, call_timeout=call_timeout, student_timeout=student_timeout,
                    python=python, jobs=jobs, hide=sorted(set(hide)), job_memory_mb=job_memory_mb,
                    isolation=isolation)
    runner.pool = cluster.choose_pool(runner, link, warm, WORKER_USER)   # the cluster, warm graders or none
    kept = private_jobs.KeptModes([Path(h) for h in runner.hide if h != str(runner.stage_root)]).close()
    started = time.monotonic()
    settings = {"exercises": [ex.id for ex in exercises], "call_timeout": call_timeout}
    rows, todo, keys = resume.split(found.entries, out_dir / "results", settings, lambda e: Row(entry=e))
    run_id = f"{os.getpid()}-{time.time():.0f}"
    if rows:
        print(f"batch: kept {len(rows)} results from an earlier run; grading {len(todo)}", file=sys.stderr)
    bar = tqdm(total=len(found.entries), initial=len(rows), desc="grading", unit="submission", dynamic_ncols=True,
               disable=(not progress) if progress is not None else None, file=sys.stderr)
    pool = ThreadPoolExecutor(max_workers=max(1, int(jobs)))
    try:
        futures = {pool.submit(runner.grade, e): e for e in todo}
        for future in as_completed(futures):
            entry = futures[future]
            try:
                row = future.result()
            except Exception as exc:  # noqa: BLE001 - the batch itself must go on
                row = runner._zero(Row(entry=entry), out_dir / "results" / entry.key / "results.json",
                                   "error", f"the batch could not run the grader: {exc}")
            rows[entry.key] = row
            resume.record(out_dir / "results" / entry.key, keys.get(entry.key), row, run_id)
            name = results.one_line(entry.student, 24)
            bar.set_postfix_str(f"{name}: {row.total:g}" if row.status == "ok" else f"{name}: {row.status}")
            bar.update(1)
    except KeyboardInterrupt:
        runner.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        runner.close()
        bar.close()
        raise
    finally:
        kept.restore()                              # the class and output folders' own modes back
    pool.shutdown(wait=True)
    bar.close()
    runner.close()
    ordered = [rows[e.key] for e in found.entries]
    found.notes += private_jobs.neighbour_notes({r.isolation for r in ordered if r.isolation},
                                                Path(submissions).resolve(), kept, runner.memory,
                                                runner.memory_mb, WORKER_USER)
    elapsed = time.monotonic() - started
    gradebook.write_csv(out_csv, ordered, exercises)
    gradebook.write_summary(out_dir, ordered, exercises, found=found, elapsed=elapsed, jobs=jobs,
                            csv_name=out_csv.name)
    return ordered, found


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                        help="one sub-folder or .zip per student, or a Gradescope export folder")
    parser.add_argument("--jobs", "-j", type=int, default=default_jobs(),
                        help="submissions graded at once (default: %(default)s; ~0.6 GB of memory each)")
    parser.add_argument("--out", default="grades.csv",
                        help="gradebook CSV; results/, summary.md and histogram.png go next to it")
    parser.add_argument("--exercises", default=None, help=f"comma list, e.g. {','.join(contract.example_ids())} (default: all)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_CALL_TIMEOUT,
                        help="seconds per call into student code")
    parser.add_argument("--student-timeout", type=float, default=600.0,
                        help="seconds one whole submission may take before it is stopped (a zero row)")
    parser.add_argument("--job-memory-mb", type=int, default=None,
                        help="memory limit of one job (grader + worker) where memory cgroups are "
                             "available (default: the worker's 1024 MB + 1000 MB)")
    parser.add_argument("--isolation", default="auto", choices=("auto", "namespaces", "user", "process"),
                        help="isolation level of every grader (as `grade --isolation`)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--cold", action="store_true",
                        help="one `grade` subprocess per student instead of warm graders (slower start-up)")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="grade on a Dask cluster, e.g. tcp://10.0.0.5:8786 (needs the [cluster] extra)")


def command(args: argparse.Namespace) -> int:
    exercises = contract.select(args.exercises)
    out = Path(args.out)
    interrupt_on_termination()
    try:
        rows, found = run_batch(Path(args.submissions), out, exercises, jobs=args.jobs,
                                call_timeout=args.timeout, student_timeout=args.student_timeout,
                                progress=False if args.no_progress else None,
                                job_memory_mb=args.job_memory_mb, isolation=args.isolation,
                                warm=not args.cold, scheduler=args.scheduler)
    except (FileNotFoundError, cluster.ClusterError) as exc:
        print(f"batch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("batch: interrupted; running graders were stopped", file=sys.stderr)
        return 130
    graded = [r for r in rows if r.status == "ok"]
    problems = [r for r in rows if r.status != "ok"]
    print(f"{len(rows)} submissions: {len(graded)} graded, {len(problems)} with problems"
          + (f" ({', '.join(sorted({r.status for r in problems}))})" if problems else ""))
    if found.ignored:
        print(f"ignored (not a folder or .zip): {', '.join(results.one_line(n, 80) for n in found.ignored[:10])}"
              + (" …" if len(found.ignored) > 10 else ""))
    for note in found.notes:
        print(f"note: {note}")
    print(f"wrote {out}, {out.parent / 'summary.md'}, {out.parent / 'histogram.png'} and "
          f"{out.parent / 'results'}/<student>/results.json")
    return 0
