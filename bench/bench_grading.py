"""Benchmark the grader: time per submission, isolation overhead, peak memory.

    .venv/bin/python bench/bench_grading.py [--runs 5] [--submission solutions] [--exercises ex1,...]

For each mode (sandbox, in-process) it runs ``python -m autograder grade`` in a fresh
process ``--runs`` times and reports medians of
  * wall time of the whole command (imports included),
  * ``execution_time`` from results.json (intake + suites, imports excluded),
  * peak memory: the sum of PSS over the grader and all its descendants (zygote, workers),
    sampled every 20 ms. PSS splits shared pages between processes, so forked workers
    sharing torch's pages are not double counted (close to what a container's memory
    cgroup charges).
The budgets: sandbox/in-process execution_time <= 1.3x; peak < 600 MB;
all five exercises in < 8 s.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def process_tree(pid: int) -> dict[int, int]:
    """``pid`` and every process under it, each with its depth below ``pid`` (``pid``: 0)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    out, stack = {}, [(pid, 0)]
    while stack:
        p, depth = stack.pop()
        out[p] = depth
        stack.extend((child, depth + 1) for child in children.get(p, []))
    return out


def descendants(pid: int) -> list[int]:
    return list(process_tree(pid))


def pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_once(submission: str, exercises: str | None, in_process: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        cmd = [sys.executable, "-m", "autograder", "grade", submission, "--results", str(out)]
        if exercises:
            cmd += ["--exercises", exercises]
        if in_process:
            cmd.append("--in-process")
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, sum(pss_kb(p) for p in descendants(proc.pid)))
            time.sleep(0.02)
        wall = time.perf_counter() - start
        data = json.loads(out.read_text())
    return {"wall": wall, "exec": data["execution_time"], "peak_mb": peak / 1024,
            "score": data["score"], "max": sum(t["max_score"] for t in data["tests"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--submission", default="solutions")
    parser.add_argument("--exercises", default=None)
    args = parser.parse_args()
    summary = {}
    for mode, in_process in (("sandbox", False), ("in-process", True)):
        runs = [run_once(args.submission, args.exercises, in_process) for _ in range(args.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "exec", "peak_mb")}
        summary[mode] = med
        print(f"{mode:>10}: wall {med['wall']:.2f} s  execution_time {med['exec']:.2f} s  "
              f"peak PSS {med['peak_mb']:.0f} MB  score {runs[0]['score']:g}/{runs[0]['max']:g}  "
              f"(median of {args.runs})")
    ratio = summary["sandbox"]["exec"] / summary["in-process"]["exec"]
    print(f"isolation overhead (execution_time sandbox / in-process): {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
