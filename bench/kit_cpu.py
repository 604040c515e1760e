"""Where the kit's own tests spend CPU: a pytest plugin that records it, and a summary.

The kit's tests run on two processes that are both busy nearly all the time (``vmstat``: 94–99 %
of both cores during ``make test``), so their wall time is their CPU time over two: to make them
faster, find the CPU. Record a run (the same command as ``make test``, plus the plugin)::

    rm -rf /tmp/kit-cpu
    PYTHONPATH=bench KIT_CPU_OUT=/tmp/kit-cpu .venv/bin/python -m pytest -q -n 2 --dist loadgroup -p kit_cpu

then summarise it, by file and by test::

    .venv/bin/python bench/kit_cpu.py /tmp/kit-cpu [--top 40]

For each test it records the wall time and three CPU times (user + system, seconds):

* ``self``: the test process itself (the grader's side of in-process gradings, the test's logic);
* ``kids``: child processes the test started and waited for (``python -m autograder ...`` in a
  fresh interpreter, ``batch``'s job slots, otter, nbgrader, Jupyter kernels, nested pytest);
* ``zygote``: the workers of in-process gradings (forked by the test process's zygote, which
  reaps them: they show in the zygote's children's times).

What it cannot see: containers started through Docker (the replica's runs are children of
``containerd``, not of the test) and processes left running after the test.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

OUT_ENV = "KIT_CPU_OUT"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# --------------------------------------------------------------------------- one test's record

@dataclass
class Row:
    """One test's line in the record (seconds): written by the plugin, read by the summary."""
    test: str
    wall: float
    self: float
    kids: float
    zygote: float

    @property
    def cpu(self) -> float:
        return self.self + self.kids + self.zygote


# --------------------------------------------------------------------------- the plugin

def _zygote_cpu() -> float:
    """CPU of this process's zygote and of the workers it has reaped (Linux; 0 elsewhere)."""
    from autograder.sandbox import forkserver, lifetime
    zygote = forkserver._shared
    fields = lifetime._stat_fields(zygote.pid) if zygote is not None else []
    return sum(int(v) for v in fields[11:15]) / _TICK     # utime stime cutime cstime


def _record(item, wall: float, before: os.times_result, after: os.times_result, zygote: float) -> None:
    folder = Path(os.environ.get(OUT_ENV, "kit-cpu"))
    folder.mkdir(parents=True, exist_ok=True)
    row = Row(test=item.nodeid, wall=round(wall, 3),
              self=round(after.user - before.user + after.system - before.system, 3),
              kids=round(after.children_user - before.children_user
                         + after.children_system - before.children_system, 3),
              zygote=round(max(0.0, zygote), 3))
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(folder / f"{name}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(asdict(row)) + "\n")


try:
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        """Each test's set-up, call and tear-down, measured together."""
        start, before, zygote = time.monotonic(), os.times(), _zygote_cpu()
        yield
        _record(item, time.monotonic() - start, before, os.times(), _zygote_cpu() - zygote)
except ImportError:                                      # the summary needs no pytest
    pass


# --------------------------------------------------------------------------- the summary

def read(folder: Path) -> list[Row]:
    return [Row(**json.loads(line)) for path in sorted(folder.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def summary(rows: list[Row], top: int) -> str:
    lines = [f"{len(rows)} tests: wall {sum(r.wall for r in rows):.0f} s summed over the processes; CPU "
             f"{sum(r.cpu for r in rows):.0f} s = self {sum(r.self for r in rows):.0f} + child processes "
             f"{sum(r.kids for r in rows):.0f} + zygote workers {sum(r.zygote for r in rows):.0f}", ""]
    files: dict[str, list[Row]] = collections.defaultdict(list)
    for r in rows:
        files[r.test.split("::", 1)[0]].append(r)
    lines.append(f"{'file':44} {'tests':>5} {'wall':>6} {'self':>6} {'kids':>6} {'zygote':>6} {'cpu':>6}")
    for name, group in sorted(files.items(), key=lambda kv: -sum(r.cpu for r in kv[1]))[:top]:
        lines.append(f"{name:44} {len(group):5d} " + " ".join(
            f"{sum(getattr(r, k) for r in group):6.0f}" for k in ("wall", "self", "kids", "zygote", "cpu")))
    lines += ["", f"{'test':100} {'wall':>6} {'cpu':>6}"]
    for r in sorted(rows, key=lambda r: -r.cpu)[:top]:
        lines.append(f"{r.test[:100]:100} {r.wall:6.1f} {r.cpu:6.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the KIT_CPU_OUT folder of a recorded run")
    parser.add_argument("--top", type=int, default=40, help="files and tests listed (default 40)")
    args = parser.parse_args(argv)
    rows = read(args.folder)
    if not rows:
        print(f"no records in {args.folder}", file=sys.stderr)
        return 1
    print(summary(rows, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
