"""What one grading costs in a warm grader (``autograder.batching.warm``, shared by a ``batch``'s job
slots), for kits side by side.

    .venv/bin/python bench/warm_fork.py [--kit PATH ...] [--runs 3] [--gradings 8] [--exercises ex1]

For each kit (a folder holding ``autograder/`` and ``reference/``: this checkout by default, or
a ``git worktree`` of an older commit, run with this venv's Python) a run starts one warm
grader, lets it grade the model solutions ``--gradings`` times in a row (a forked grader each,
as ``batch`` does) and records each grading's wall time and CPU: the forked grader and all it
waited for (its zygote, its workers), read as the warm grader's children's CPU in
``/proc/<pid>/stat``. The warm grader's own start-up is not counted. Kits take turns run by
run, so a busy minute slows every kit alike. Prints the median per kit and its ratio to the
first kit's.
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

from autograder.batching.pool import WarmGrader  # noqa: E402
from autograder.sandbox.lifetime import _stat_fields  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def children_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s waited-for children (cutime + cstime)."""
    fields = _stat_fields(pid)            # [state, ppid, ..., utime, stime, cutime, cstime, ...]
    if not fields:
        raise RuntimeError(f"the warm grader {pid} is gone")
    return (int(fields[13]) + int(fields[14])) / TICK


def one_run(kit: Path, exercises: str, gradings: int, scratch: Path) -> list[tuple[float, float]]:
    """(wall, CPU) of each of ``gradings`` gradings by one fresh warm grader of ``kit``."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(kit), PYTHONHASHSEED="0")
    warm = WarmGrader([sys.executable, "-m", "autograder.batching.warm", "--exercises", exercises],
                      env, scratch, scratch / "warm.err")
    try:
        warm.send({"job": 0, "argv": ["--help"], "cwd": str(scratch), "log": str(scratch / "help.log")})
        if warm.reply(0, "code", 600) is None:        # its start-up done (a job is read once it is)
            raise RuntimeError(f"{kit}: the warm grader did not start: {(scratch / 'warm.err').read_text()[-2000:]}")
        argv = ["grade", str(kit / "solutions"), "--exercises", exercises, "--results", str(scratch / "r.json")]
        out = []
        for job in range(1, gradings + 1):
            cpu, started = children_cpu(warm.proc.pid), time.perf_counter()
            warm.send({"job": job, "argv": argv, "cwd": str(scratch), "log": str(scratch / "grade.log")})
            done = warm.reply(job, "code", 600)
            if done is None or done["code"] != 0:
                raise RuntimeError(f"{kit}: grading {job} failed: {(scratch / 'grade.log').read_text()[-2000:]}")
            out.append((time.perf_counter() - started, children_cpu(warm.proc.pid) - cpu))
        return out
    finally:
        warm.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kit", action="append", type=Path, help="a kit folder (repeatable; default: this checkout)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gradings", type=int, default=8, help="gradings per run (default 8)")
    parser.add_argument("--exercises", default="ex1")
    args = parser.parse_args(argv)
    kits = [k.resolve() for k in (args.kit or [ROOT])]
    samples: dict[Path, list[tuple[float, float]]] = {k: [] for k in kits}
    with tempfile.TemporaryDirectory(prefix="ag-warm-fork-") as tmp:
        for run in range(args.runs):
            for kit in kits:
                samples[kit] += one_run(kit, args.exercises, args.gradings, Path(tmp))
                wall, cpu = zip(*samples[kit][-args.gradings:])
                print(f"run {run + 1} {kit}: median wall {statistics.median(wall):.3f} s, "
                      f"CPU {statistics.median(cpu):.3f} s", flush=True)
    first = statistics.median(c for _, c in samples[kits[0]])
    print(f"\nper grading of {args.exercises} in a warm grader ({args.runs} runs x {args.gradings}), medians:")
    for kit in kits:
        wall = statistics.median(w for w, _ in samples[kit])
        cpu = statistics.median(c for _, c in samples[kit])
        print(f"  {str(kit):40s} wall {wall:.3f} s  CPU {cpu:.3f} s  ({cpu / first:.2f} of the first kit's CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
