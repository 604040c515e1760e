"""Where a command's CPU goes over time: its process tree sampled, per half second, by role.

    .venv/bin/python bench/cpu_timeline.py [--step 0.5] -- .venv/bin/python -m autograder batch CLASS --jobs 2 ...

It runs the command and, every 50 ms, reads the CPU time (user + system) of every process in
its tree from ``/proc`` (Linux only). It prints one row per ``--step`` seconds: the CPU each
*role* used in it, a role being a process's depth under the command and its name
(``d0:python`` the command itself, ``d1:python`` a batch's warm grader, ``d2:python`` the
graders it forks, ``d3:ag-zygote`` their zygotes, ``d5:ag-worker`` the workers running student
code, …), then the total of each role. A row's sum near ``step × cores`` is a busy machine;
much less, cores left idle (a start-up or a tail that runs on one core).

It found that a ``batch --jobs 2`` of 12 submissions leaves one core idle for about 1.5 s
while the warm grader loads, and for about 1.3 s at the end while the report draws its
histograms. What it cannot see: a process that starts and ends between two samples, CPU
used by processes outside the tree (Docker containers), and the CPU a process used before
it was first sampled is counted in its first step.
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grading import process_tree  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.05


@dataclass(frozen=True)
class Process:
    name: str
    cpu_s: float


def _read(pid: int) -> Process | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None                                    # ended meanwhile
    close = stat.rfind(")")                            # the name may hold spaces and parentheses
    fields = stat[close + 2:].split()
    return Process(stat[stat.find("(") + 1:close], (int(fields[11]) + int(fields[12])) / TICKS)


def record(command: list[str], step: float) -> tuple[float, int, dict[int, collections.Counter]]:
    """Run ``command``; (wall seconds, exit code, step index -> CPU seconds by role)."""
    start = time.monotonic()
    proc = subprocess.Popen(command)
    seen: dict[int, float] = {}
    steps: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    while proc.poll() is None:
        index = int((time.monotonic() - start) / step)
        for pid, depth in process_tree(proc.pid).items():
            if (process := _read(pid)) is not None:
                steps[index][f"d{depth}:{process.name}"] += process.cpu_s - seen.get(pid, 0.0)
                seen[pid] = process.cpu_s
        time.sleep(SAMPLE_S)
    return time.monotonic() - start, proc.returncode, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", type=float, default=0.5, help="seconds per row (default 0.5)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    wall, code, steps = record(command, args.step)
    roles = sorted({role for counts in steps.values() for role in counts})
    out = sys.stderr
    print(f"\n{wall:.2f} s wall, exit code {code}; CPU seconds per {args.step:g} s by role:", file=out)
    print("     t " + " ".join(f"{role[:14]:>14}" for role in roles) + "    sum", file=out)
    for index in sorted(steps):
        counts = steps[index]
        print(f"{index * args.step:6.1f} " + " ".join(f"{counts[role]:14.2f}" for role in roles)
              + f" {sum(counts.values()):6.2f}", file=out)
    totals = collections.Counter()
    for counts in steps.values():
        totals.update(counts)
    print("totals " + " ".join(f"{totals[role]:14.2f}" for role in roles) + f" {sum(totals.values()):6.2f}", file=out)
    return code


if __name__ == "__main__":
    sys.exit(main())
