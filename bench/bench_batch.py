"""Benchmark batch grading: throughput with 1 and 2 parallel jobs, cold and warm graders.

    .venv/bin/python bench/bench_batch.py [--count 40] [--jobs 1 2] [--modes cold warm]
                                          [--repeat 3] [--exercises ex1,...]

Builds ``--count`` submissions mixing what a class hands in: the model solutions, the
untouched stubs, and solutions with one exercise replaced by a known mistake from
``tests/submissions/<ex>/mutants/`` (some as folders, some as zips), then runs
``autograder.batch.run_batch`` on them once per ``--jobs`` value and reports wall time,
throughput (submissions per minute), speed-up over the first ``--jobs`` value, the mean time
per submission, and whether every run gave the same totals.

``cold``: each submission in its own ``python -m autograder grade`` subprocess (interpreter
and torch start-up, ~2 s per submission); ``warm``: warm graders (``autograder.batching``),
one per job, forking a grader per submission. Each (mode, jobs) runs ``--repeat`` times; the
median wall time is reported. On a shared machine
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
from mutants import mutant_source  # noqa: E402  (tests/mutants.py: a mutant is a patch)


def mutants(limit_per_exercise: int = 2) -> list[Path]:
    out: list[Path] = []
    for ex in contract.EXERCISES:
        folder = ROOT / "tests" / "submissions" / ex.id / "mutants"
        out += sorted(folder.glob("*.diff"))[:limit_per_exercise] if folder.is_dir() else []
    return out


def build(folder: Path, count: int, exercises: tuple[contract.Exercise, ...]) -> dict[str, int]:
    """``count`` submissions in ``folder``: 4 solutions, 2 stubs, 2 mutants in every 8."""
    kinds = {"solution": 0, "stub": 0, "mutant": 0}
    bad = mutants()
    for i in range(count):
        slot = i % 8
        files = {ex.filename: (ROOT / "solutions" / ex.folder / ex.filename).read_text()
                 for ex in exercises}
        if slot in (4, 5):
            kind = "stub"
            files = {ex.filename: (ROOT / "assignments" / ex.folder / ex.filename).read_text()
                     for ex in exercises}
        elif slot in (6, 7) and bad:
            kind = "mutant"
            mutant = bad[(i // 8 * 2 + slot - 6) % len(bad)]
            ex = contract.BY_ID[mutant.parent.parent.name]
            if ex in exercises:
                files[ex.filename] = mutant_source(mutant)
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
    parser.add_argument("--modes", nargs="+", default=["cold", "warm"], choices=["cold", "warm"])
    parser.add_argument("--repeat", type=int, default=3, help="runs per (mode, jobs); the median is reported")
    args = parser.parse_args()
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
                for rep in range(args.repeat):
                    started = time.monotonic()
                    rows, _ = batch.run_batch(subs, Path(tmp) / f"out-{mode}-{jobs}-{rep}" / "grades.csv",
                                              exercises, jobs=jobs, student_timeout=args.student_timeout,
                                              progress=None, warm=mode == "warm")
                    walls.append(time.monotonic() - started)
                    first = first or rows
                rows = first
                totals = {r.entry.key: r.total for r in rows}
                problems = sum(r.status not in ("ok", "no files") for r in rows)
                runs.append((f"{mode} {jobs}", statistics.median(walls), totals,
                             statistics.fmean(r.seconds for r in rows), problems, os.getloadavg()[0]))

    base = runs[0][1]
    print(f"\n{'mode jobs':>9} {'wall s':>8} {'subs/min':>9} {'speed-up':>9} {'s/sub (each)':>13} "
          f"{'problems':>9} {'load':>6}")
    for jobs, wall, _, mean_each, problems, load in runs:
        print(f"{jobs:>9} {wall:>8.1f} {len(runs[0][2]) / wall * 60:>9.1f} {base / wall:>8.2f}x "
              f"{mean_each:>13.1f} {problems:>9} {load:>6.2f}")
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
