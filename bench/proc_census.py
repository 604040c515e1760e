"""Which fresh Python interpreters a command starts, and the CPU each spent: a census.

    .venv/bin/python bench/proc_census.py install           # into this venv, inert until asked
    AG_PROC_CENSUS=/tmp/census make test                      # or any command using this venv
    .venv/bin/python bench/proc_census.py report /tmp/census
    .venv/bin/python bench/proc_census.py remove

``install`` puts a ``.pth`` file into the venv's ``site-packages``: every interpreter of the
venv that starts with ``AG_PROC_CENSUS`` set (a folder; make it 1777 when other users' processes
should write there too) records, when it exits through ``atexit``, its argv, its parent, whether
it imported torch and the CPU it used itself (not its children's). Without the variable the
``.pth`` does nothing but read it. What it cannot see: processes that end with ``os._exit``
without running ``atexit`` (the zygotes and workers; they are forks, not fresh interpreters,
except spawned workers), interpreters outside this venv (the replica's containers, a Python
outside ``/root``). A grader forked by ``batch``'s warm grader runs ``atexit`` and is recorded
with the warm grader's argv: ``report`` counts it as ``forked grader``.

It told us (stop of 2026-11-29) that a whole ``make test`` starts about 110 ``grade`` CLIs
(some 235 s of their own CPU, ~2.2 s each, mostly ``import torch``) and 29 warm graders, and
forks 81 graders from them: see ``bench/kit_cpu.py`` for the same run by test.
"""
from __future__ import annotations

import argparse
import collections
import json
import site
import sys
from dataclasses import dataclass
from pathlib import Path

ENV = "AG_PROC_CENSUS"
PTH = "zz_ag_proc_census.pth"
MODULE = "zz_ag_proc_census"

RECORDER = f'''"""Written by bench/proc_census.py: records this interpreter at exit when ${ENV} is set."""
import atexit, json, os, sys, time

_folder = os.environ["{ENV}"]
_argv = list(getattr(sys, "orig_argv", sys.argv))


def _record():
    try:
        cpu = os.times()
        path = os.path.join(_folder, f"{{os.getpid()}}-{{time.time_ns()}}.json")
        with open(path, "w") as handle:
            json.dump({{"pid": os.getpid(), "ppid": os.getppid(), "argv": _argv,
                       "cpu": cpu.user + cpu.system,
                       "torch": "torch" in sys.modules}}, handle)
    except Exception:
        pass


atexit.register(_record)
'''
LOADER = f'import os; exec("try:\\n import {MODULE}\\nexcept Exception:\\n pass") if os.environ.get("{ENV}") else None\n'


def _site_packages() -> Path:
    return Path(site.getsitepackages()[0])


def install() -> None:
    folder = _site_packages()
    (folder / f"{MODULE}.py").write_text(RECORDER, encoding="utf-8")
    (folder / PTH).write_text(LOADER, encoding="utf-8")
    print(f"installed in {folder}; set {ENV}=<folder> to record")


def remove() -> None:
    for name in (PTH, f"{MODULE}.py"):
        (_site_packages() / name).unlink(missing_ok=True)
    print("removed")


def kind_of(argv: list[str], forked: bool) -> str:
    """A recorded interpreter's kind, from its command line."""
    line = " ".join(argv)
    if "autograder.batching.warm" in line:
        return "forked grader" if forked else "warm grader"
    for marker, kind in (("ipykernel", "Jupyter kernel"), ("otter", "otter"), ("nbgrader", "nbgrader"),
                         ("jupyter", "jupyter"), ("pip", "pip"), ("dask", "dask"),
                         ("exec(eval(sys.stdin.readline()))", "xdist worker")):
        if marker in line:
            return kind
    if "autograder" in argv:
        words = argv[argv.index("autograder") + 1:]
        return f"autograder {words[0]}" if words else "autograder"
    if "pytest" in line:
        return "nested pytest"
    return "other: " + line[:60]


@dataclass
class Tally:
    """The interpreters of one kind: how many, their own CPU (s), how many loaded torch."""
    count: int = 0
    cpu: float = 0.0
    torch: int = 0


def report(folder: Path) -> None:
    rows = [json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("*.json")]
    argv_of = {r["pid"]: r["argv"] for r in rows}
    tallies: dict[str, Tally] = collections.defaultdict(Tally)
    for r in rows:
        tally = tallies[kind_of(r["argv"], forked=argv_of.get(r["ppid"]) == r["argv"])]
        tally.count += 1
        tally.cpu += r["cpu"]
        tally.torch += bool(r["torch"])
    print(f"{len(rows)} interpreters, {sum(t.cpu for t in tallies.values()):.0f} s of their own CPU\n")
    print(f"{'kind':64} {'count':>5} {'cpu s':>8} {'per one':>8} {'torch':>5}")
    for kind, t in sorted(tallies.items(), key=lambda kv: -kv[1].cpu):
        print(f"{kind[:64]:64} {t.count:5d} {t.cpu:8.1f} {t.cpu / t.count:8.2f} {t.torch:5d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("install")
    sub.add_parser("remove")
    shown = sub.add_parser("report")
    shown.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.what == "install":
        install()
    elif args.what == "remove":
        remove()
    else:
        report(args.folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
