"""Benchmark batch grading: throughput with 1 and 2 parallel jobs, cold and warm graders, Dask.

    .venv/bin/python bench/bench_batch.py [--count 40] [--jobs 1 2] [--modes cold warm dask]
                                          [--repeat 3] [--exercises ex1,...] [--scaling]

Builds ``--count`` submissions mixing what a class hands in (in every 10: four model
solutions, a stub, two solutions with one exercise replaced by a known mistake from
``tests/submissions/<ex>/mutants/``, a slow but correct one that sleeps 3 s at import, and two
hostile ones from ``tests/hostile/`` in place of ex1: kill_the_grader, os_exit_at_import,
fork_bomb, monkeypatch_stub, memory_bomb_in_call, huge_stdout_solution; some as folders, some
as zips), then runs ``autograder.batch.run_batch`` on them once per mode and ``--jobs`` value
and reports wall time, throughput (submissions per minute), speed-up over the first run, the
mean time per submission, and whether every run gave the same totals.

``cold``: each submission in its own ``python -m autograder grade`` subprocess (interpreter
and torch start-up, ~2 s per submission); ``warm``: the warm grader (``autograder.batching``)
every job slot shares, forking a grader per submission; ``dask``: ``--scheduler`` on a local Dask
cluster started by the bench (``tests/local_dask.py``: a scheduler and two workers of
``--jobs // 2`` threads, at least one, on 127.0.0.1; its start-up is not timed). Each
(mode, jobs) runs ``--repeat`` times; the median wall time is reported (``--quick``: ex1, 2 jobs, one
run). "s/sub (each)" is a row's own time; with ``dask`` it includes the wait in the workers'
queue (twice as many tasks in flight as worker threads). On a shared machine
the speed-up is bounded by the cores that are actually free: note the load average printed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from autograder import batch, contract  # noqa: E402
from local_dask import LocalDask  # noqa: E402  (tests/local_dask.py: scheduler and workers on 127.0.0.1)
from mutants import mutant_source  # noqa: E402  (tests/mutants.py: a mutant is a patch)


def mutants(limit_per_exercise: int = 2) -> list[Path]:
    out: list[Path] = []
    for ex in contract.EXERCISES:
        folder = ROOT / "tests" / "submissions" / ex.id / "mutants"
        out += sorted(folder.glob("*.diff"))[:limit_per_exercise] if folder.is_dir() else []
    return out


HOSTILE = ("kill_the_grader", "os_exit_at_import", "fork_bomb", "monkeypatch_stub", "memory_bomb_in_call",
           "huge_stdout_solution")
SLOW = "\nimport time as _bench_time\n_bench_time.sleep(3)\n"


def hostile(case: str) -> str:
    """``tests/hostile/<case>/attention.py`` with its templates applied (tests/hostile_cases.py)."""
    from hostile_cases import render
    return render((ROOT / "tests" / "hostile" / case / "attention.py").read_text(), "benchtoken", "benchsecret")


def build(folder: Path, count: int, exercises: tuple[contract.Exercise, ...],
          hostile_cases: tuple[str, ...] = HOSTILE) -> dict[str, int]:
    """``count`` submissions in ``folder``: in every 10, 4 solutions, a stub, 2 mutants, a slow one
    and 2 hostile ones (taken in turn from ``hostile_cases``)."""
    kinds = {"solution": 0, "stub": 0, "mutant": 0, "slow": 0, "hostile": 0}
    bad = mutants()
    ex1 = contract.BY_ID["ex1"]
    for i in range(count):
        slot = i % 10
        files = {ex.filename: (ROOT / "solutions" / ex.folder / ex.filename).read_text()
                 for ex in exercises}
        if slot == 4:
            kind = "stub"
            files = {ex.filename: (ROOT / "assignments" / ex.folder / ex.filename).read_text()
                     for ex in exercises}
        elif slot in (5, 6) and bad:
            kind = "mutant"
            mutant = bad[(i // 10 * 2 + slot - 5) % len(bad)]
            ex = contract.BY_ID[mutant.parent.parent.name]
            if ex in exercises:
                files[ex.filename] = mutant_source(mutant)
        elif slot == 7:
            kind = "slow"
            first = exercises[0]
            files[first.filename] += SLOW
        elif slot in (8, 9) and ex1 in exercises:
            kind = "hostile"
            files[ex1.filename] = hostile(hostile_cases[(i // 10 * 2 + slot - 8) % len(hostile_cases)])
        else:
            kind = "solution"
        kinds[kind] += 1
        name = f"student{i:03d}_{kind}"
        if i % 3 == 2:                                         # every third one as a zip
            with zipfile.ZipFile(folder / f"{name}.zip", "w") as archive:
                for filename, text in files.items():
                    archive.writestr(f"{name}/{filename}", text)
        else:
            (folder / name).mkdir()
            for filename, text in files.items():
                (folder / name / filename).write_text(text)
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--exercises", default=None, help="comma list (default: all five)")
    parser.add_argument("--student-timeout", type=float, default=600.0)
    parser.add_argument("--modes", nargs="+", default=["cold", "warm"], choices=["cold", "warm", "dask"])
    parser.add_argument("--repeat", type=int, default=3, help="runs per (mode, jobs); the median is reported")
    parser.add_argument("--quick", action="store_true",
                        help="a shared machine's run: ex1 only, --jobs 2, --repeat 1 (still --count submissions)")
    parser.add_argument("--scaling", action="store_true",
                        help="warm graders with --jobs 1, 2, 4, … up to this machine's cores: throughput "
                             "against N and how far it is from linear (run it on a bigger machine)")
    args = parser.parse_args()
    if args.quick:
        args.exercises, args.jobs, args.repeat = args.exercises or "ex1", [2], 1
    if args.scaling:
        cores = os.cpu_count() or 1
        args.modes, args.jobs = ["warm"], [n for n in (1, 2, 4, 8, 16, 32, 64, 128) if n < cores] + [cores]
        args.jobs = sorted(set(args.jobs))
    exercises = contract.select(args.exercises)

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        kinds = build(subs, args.count, exercises)
        print(f"{args.count} submissions ({', '.join(f'{n} {k}s' for k, n in kinds.items())}), "
              f"exercises {','.join(ex.id for ex in exercises)}; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.2f} at start")
        runs = []
        for mode in args.modes:
            for jobs in args.jobs:
                walls, first = [], None
                local = LocalDask(workers=2, nthreads=max(1, jobs // 2)) if mode == "dask" else None
                try:
                    for rep in range(args.repeat):
                        started = time.monotonic()
                        rows, _ = batch.run_batch(subs, Path(tmp) / f"out-{mode}-{jobs}-{rep}" / "grades.csv",
                                                  exercises, jobs=jobs, student_timeout=args.student_timeout,
                                                  progress=None, warm=mode != "cold",
                                                  scheduler=local.address if local else None)
                        walls.append(time.monotonic() - started)
                        print(f"  {mode} {jobs} run {rep + 1}: {walls[-1]:.1f} s", flush=True)
                        first = first or rows
                finally:
                    if local is not None:
                        local.close()
                rows = first
                totals = {r.entry.key: r.total for r in rows}
                problems = sum(str(r.status) not in ("ok", "no files") for r in rows)
                runs.append((f"{mode} {jobs}", statistics.median(walls), totals,
                             statistics.fmean(r.seconds for r in rows), problems, os.getloadavg()[0]))

    base = runs[0][1]
    print(f"\n{'mode jobs':>9} {'wall s':>8} {'subs/min':>9} {'speed-up':>9} {'of linear':>10} "
          f"{'s/sub (each)':>13} {'problems':>9} {'load':>6}")
    for label, wall, _, mean_each, problems, load in runs:
        jobs = int(label.split()[1])
        base_jobs = int(runs[0][0].split()[1])
        linear = (base / wall) / (jobs / base_jobs)
        print(f"{label:>9} {wall:>8.1f} {len(runs[0][2]) / wall * 60:>9.1f} {base / wall:>8.2f}x "
              f"{linear:>9.0%} {mean_each:>13.1f} {problems:>9} {load:>6.2f}")
    same = all(r[2] == runs[0][2] for r in runs)
    print(f"\ntotals identical across runs: {'yes' if same else 'NO'}")
    if not same:
        for key in runs[0][2]:
            values = [r[2][key] for r in runs]
            if len(set(values)) > 1:
                print(f"  {key}: {values}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
