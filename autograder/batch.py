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

Output (next to ``--out``, default ``grades.csv``): the gradebook CSV (one row per person),
``results/<student>/`` (``results.json`` and ``grade.log``), ``summary.md``, ``histogram.png``
and ``report.html``, with ``--lms`` the LMS imports (:mod:`autograder.gradebook`,
:mod:`autograder.staff`). ``--only NAME,…`` regrades the named students and keeps every other
row (:mod:`autograder.batching.selection`).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from autograder import contract, filetree, results
from autograder import jobs as private_jobs
from autograder.batching import cluster, interrupt_on_termination, resume, selection
from autograder.batching.discovery import Discovery, discover
from autograder.batching.runner import GradeTimes, Row, RowStatus, Runner
from autograder.cli import add_time_arguments, positive_int, positive_seconds
from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT, default_worker_user
from autograder.staff import options as staff_options

# Grading one submission (the subprocess, its timeout, its row): autograder/batching/runner.py.


# --------------------------------------------------------------------------- the batch

def run_batch(submissions: Path, out_csv: Path, exercises: tuple[contract.Exercise, ...] = contract.DEFAULT,
              *, jobs: int = 1, call_timeout: float = DEFAULT_CALL_TIMEOUT, student_timeout: float = 600.0,
              progress: bool | None = None, python: str | None = None, scheduler: str | None = None,
              tls: cluster.Tls | None = None,
              job_memory_mb: int | None = None, isolation: str | None = None,
              warm: bool = True, options: staff_options.Options | None = None,
              only: list[str] | None = None, times: GradeTimes = GradeTimes()) -> tuple[list[Row], Discovery]:
    """Grade every submission (``only``: the named ones; every other keeps its last result);
    write the CSV, results/, summary.md, histogram.png, report.html and the LMS imports."""
    from autograder import gradebook
    from autograder.staff import analysis as staff_analysis
    from autograder.staff import figures as staff_figures
    from autograder.staff import outputs as staff_outputs

    found = discover(submissions)
    chosen = selection.chosen(found.entries, only) if only else None      # before anything is touched
    out_csv = Path(out_csv).resolve()
    out_dir = out_csv.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    hide = [str(Path(submissions).resolve()), str(found.entries[0].path.parent.resolve())] if found.entries \
        else [str(Path(submissions).resolve())]
    link = cluster.connect(scheduler, tls=tls) if scheduler else None      # Dask (batching/cluster.py)
    jobs = link.in_flight(jobs) if link else jobs
    runner = Runner(out_dir, exercises, call_timeout=call_timeout, student_timeout=student_timeout,
                    python=python, jobs=jobs, hide=sorted(set(hide)), job_memory_mb=job_memory_mb,
                    isolation=isolation, times=times)
    try:                                            # whatever fails, no grader and no private copy is left
        runner.pool = cluster.choose_pool(runner, link, warm, default_worker_user())   # the cluster, warm graders or none
        if runner.pool is not None:
            runner.pool.start()                     # the warm grader loads while the rest is set up
        # Compared while they are graded (it reads their files only), and the report's figures'
        # imports loaded meanwhile: both on threads started only now, as they share this
        # thread's interpreter lock (started first, they delayed the warm grader by 0.5-1 s).
        similarity = staff_analysis.start_similar(found.entries, exercises, options or staff_options.Options())
        staff_figures.load_in_background()
        kept = private_jobs.KeptModes([Path(h) for h in runner.hide if h != str(runner.stage_root)]).close()
        try:                                        # whatever fails, the folders' own modes come back
            graded = _grade_all(runner, found, out_dir, exercises, call_timeout, jobs, progress, chosen)
        finally:
            kept.restore()
    finally:
        runner.close()
    ordered = [graded.rows[e.key] for e in found.entries]
    found.notes += private_jobs.neighbour_notes({r.isolation for r in ordered if r.isolation},
                                                Path(submissions).resolve(), kept, runner.memory,
                                                runner.memory_mb, default_worker_user())
    facts = staff_outputs.run_facts(exercises, found=found, jobs=jobs, scheduler=scheduler, warm=warm,
                                    elapsed=graded.seconds, graded_now=graded.graded_now, kept=graded.kept)
    gradebook.write_outputs(out_csv, ordered, exercises, facts=facts, options=options, found=found,
                            similarity=similarity)
    return ordered, found


@dataclass
class Graded:
    """What :func:`_grade_all` did: every entry's row, the time it took, how many entries it
    graded now and how many results it kept from an earlier run."""
    rows: dict[str, Row]
    seconds: float
    graded_now: int
    kept: int


def _grade_all(runner: Runner, found: Discovery, out_dir: Path, exercises: tuple[contract.Exercise, ...],
               call_timeout: float, jobs: int, progress: bool | None, chosen: set[str] | None) -> Graded:
    """Grade every entry not kept from an earlier run (``chosen``: only those entries)."""
    from tqdm import tqdm

    started = time.monotonic()
    settings = {"exercises": [ex.id for ex in exercises], "call_timeout": call_timeout, **runner.times.settings()}
    missing: list[str] = []
    if chosen is None:
        rows, todo, keys = resume.split(found.entries, out_dir / "results", settings, lambda e: Row(entry=e))
    else:
        rows, todo, keys, missing, stale = selection.split(found.entries, out_dir / "results", settings,
                                                           lambda e: Row(entry=e), chosen)
        if stale:
            found.notes.append(f"--only kept {len(stale)} result(s) made by another kit build, other settings "
                               "or other submission files (a batch without --only would regrade them)")
    kept_results = len(rows)
    if rows:
        print(f"batch: kept {len(rows)} results from an earlier run; grading {len(todo)}", file=sys.stderr)
    for key in missing:
        entry = next(e for e in found.entries if e.key == key)
        rows[key] = Row(entry=entry, status=RowStatus.ERROR, reason=selection.NO_EARLIER_RESULT,
                        scores={ex.id: 0.0 for ex in exercises},
                        max_scores={ex.id: float(ex.points) for ex in exercises})
    run_id = f"{os.getpid()}-{time.time():.0f}"
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
                                   RowStatus.ERROR, f"the batch could not run the grader: {exc}")
            rows[entry.key] = row
            resume.record(out_dir / "results" / entry.key, keys.get(entry.key), row, run_id)
            name = results.one_line(entry.student, 24)
            bar.set_postfix_str(f"{name}: {row.total:g}" if row.status is RowStatus.OK else f"{name}: {row.status}")
            bar.update(1)
    except KeyboardInterrupt:
        runner.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
        raise
    pool.shutdown(wait=True)
    bar.close()
    return Graded(rows, time.monotonic() - started, len(todo), kept_results)


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                        help="one sub-folder or .zip per student, or a Gradescope export folder")
    parser.add_argument("--jobs", "-j", type=positive_int, default=default_jobs(),
                        help="submissions graded at once (default: %(default)s; ~0.6 GB of memory each)")
    parser.add_argument("--out", default="grades.csv",
                        help="gradebook CSV; results/, summary.md and histogram.png go next to it")
    parser.add_argument("--exercises", default=None, help=f"comma list, e.g. {','.join(contract.example_ids())} (default: all)")
    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_CALL_TIMEOUT,
                        help="seconds per call into student code")
    add_time_arguments(parser)                   # --import-timeout, --budget, --exercise-budget: as `grade`
    parser.add_argument("--student-timeout", type=positive_seconds, default=600.0,
                        help="seconds one whole submission may take before it is stopped (a zero row; "
                             "keep it above the exercises' budgets)")
    parser.add_argument("--job-memory-mb", type=positive_int, default=None,
                        help="memory limit of one job (grader + worker) where memory cgroups are "
                             "available (default: the worker's 1024 MB + 1000 MB)")
    parser.add_argument("--isolation", default="auto", metavar="LEVEL",
                        help="isolation level of every grader (as `grade --isolation`)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--cold", action="store_true",
                        help="one `grade` subprocess per student instead of warm graders (slower start-up)")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="grade on a Dask cluster, e.g. tls://10.0.0.5:8786 (needs the [cluster] extra)")
    for flag, what in (("--tls-ca-file", "the CA certificate that signed the cluster's certificates"),
                       ("--tls-cert", "your client certificate"), ("--tls-key", "your client key")):
        parser.add_argument(flag, metavar="PEM", default=None, help=f"with a tls:// scheduler: {what}")
    parser.add_argument("--only", default=None, metavar="NAME,…",
                        help="regrade only these students (name, email, SID or folder), keep every other row")
    staff_options.add_arguments(parser)


def _tls(args: argparse.Namespace) -> cluster.Tls | None:
    files = (args.tls_ca_file, args.tls_cert, args.tls_key)
    if not any(files):
        return None
    if not all(files):
        raise cluster.ClusterError("TLS needs all three of --tls-ca-file, --tls-cert and --tls-key")
    return cluster.Tls(*files)


def command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    try:
        exercises = contract.select(args.exercises)
        options = staff_options.from_args(args)
        times = GradeTimes.from_args(args)
    except (staff_options.PolicyError, ValueError) as exc:
        print(f"batch: {exc}", file=sys.stderr)
        return 2
    # Interruptible whatever started us (a script's background job inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupt_on_termination()
    try:
        from autograder.sandbox import levels
        levels.requested(args.isolation)          # an unknown level: say so, grade nothing
        rows, found = run_batch(Path(args.submissions), out, exercises, jobs=args.jobs,
                                call_timeout=args.timeout, student_timeout=args.student_timeout,
                                progress=False if args.no_progress else None,
                                job_memory_mb=args.job_memory_mb, isolation=args.isolation,
                                warm=not args.cold, scheduler=args.scheduler, tls=_tls(args), options=options,
                                times=times,
                                only=selection.parse(args.only) if args.only is not None else None)
    except (FileNotFoundError, ValueError, cluster.ClusterError, selection.UnknownStudents) as exc:
        print(f"batch: {exc}", file=sys.stderr)
        return 2
    except filetree.TooLarge as exc:
        print(f"batch: {args.submissions} {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("batch: interrupted; running graders were stopped", file=sys.stderr)
        return 130
    graded = [r for r in rows if r.status is RowStatus.OK]
    problems = [r for r in rows if r.status is not RowStatus.OK]
    print(f"{len(rows)} submissions: {len(graded)} graded, {len(problems)} with problems"
          + (f" ({', '.join(sorted({r.status for r in problems}))})" if problems else ""))
    if found.ignored:
        print(f"ignored (not a folder or .zip): {', '.join(results.one_line(n, 80) for n in found.ignored[:10])}"
              + (" …" if len(found.ignored) > 10 else ""))
    for note in found.notes:
        print(f"note: {note}")
    extra = "".join(f", {out.parent / f'{lms}.csv'}" for lms in options.lms)
    print(f"wrote {out}{extra}, {out.parent / 'report.html'}, {out.parent / 'summary.md'}, "
          f"{out.parent / 'histogram.png'} and {out.parent / 'results'}/<student>/results.json")
    return 0
