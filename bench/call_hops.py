"""How many module hops one call into student code takes in the grader, measured.

    .venv/bin/python bench/call_hops.py [--kit PATH]

``--kit``: another checkout's kit (e.g. a ``git worktree`` of an older commit), run with this
venv's Python; an older kit's budget wrapper (``BudgetedSandbox``) is taken where there is no
``Budgeted`` middleware.

Grades nothing: opens a sandbox on the model solution of ex1 (the backend the machine
chooses), wraps it in the budget middleware as the grading plugin does, and calls
``attention.scaled_dot_product_attention_np`` once to warm up and once under
``sys.setprofile``. It prints the *layers* the call goes through: the kit's modules on the
grader's call stack at its deepest point (the moment the request is written to the worker),
consecutive frames of one module merged; a hop is a step from one layer to the next, and
the call goes back out through the same ones. Helpers a layer calls and returns from
(building a frame, encoding a value) are not layers; the second count takes them too: how
often consecutive function entries change module.
"""
from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _layers(frame) -> list[str]:
    """The kit modules on the stack from the outermost down to ``frame``, repeats merged."""
    names = []
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("autograder") and (not names or names[-1] != name):
            names.append(name)
        frame = frame.f_back
    return names[::-1]


def module_path(call) -> tuple[list[str], list[str]]:
    """The deepest chain of kit modules on the stack while ``call`` runs, and the sequence of
    kit modules whose functions were entered (consecutive repeats merged)."""
    deepest: list[str] = []
    entered: list[str] = []

    def profile(frame, event, _arg):
        nonlocal deepest
        if event == "call":
            layers = _layers(frame)
            if len(layers) > len(deepest):
                deepest = layers
            if layers and (not entered or entered[-1] != layers[-1]):
                entered.append(layers[-1])

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return deepest, entered


CALLS = 500


def _latency(call) -> float:
    """Median seconds of one call (a 2x3 attention: the worker's own time is tiny)."""
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _budgeted(sandbox, budgets):
    """The budget layer as the kit's grading plugin puts it around the sandbox."""
    from autograder import budget
    if hasattr(budget, "Budgeted"):
        return budget.Budgeted(sandbox, budgets, call_timeout=60.0)
    return budget.BudgetedSandbox(sandbox, budgets)                 # kits before the middleware


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kit", type=Path, default=ROOT)
    kit = parser.parse_args().kit.resolve()
    sys.path.insert(0, str(kit))
    from autograder import contract, intake
    from autograder.budget import Budgets
    from autograder.grading import open_sandbox
    from autograder.sandbox.limits import SandboxConfig
    from autograder.sandbox.proxy import StudentModules

    ex1 = contract.BY_ID["ex1"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submission"
        folder.mkdir()
        (folder / ex1.filename).write_text((kit / "solutions" / ex1.folder / ex1.filename).read_text())
        submission = intake.collect(folder, (ex1,))
        if "exercises" in inspect.signature(open_sandbox).parameters:
            sandbox = open_sandbox(submission, SandboxConfig(), (ex1,))
        else:                                                       # kits before the backends
            sandbox = open_sandbox(submission, SandboxConfig())
        try:
            budgets = Budgets({"ex1": 600.0})
            budgets.enter("ex1")
            channel = _budgeted(sandbox, budgets)
            student = StudentModules(channel, [ex1.module])
            q = np.ones((2, 3))
            attend = lambda: student.attention.scaled_dot_product_attention_np(q, q, q)  # noqa: E731
            attend()
            path, entered = module_path(attend)
            latency = _latency(attend)
        finally:
            sandbox.close()
    print(" -> ".join(p.removeprefix("autograder.") for p in path))
    print(f"layers: {len(path) - 1} hops down (and as many back) for one call")
    print(f"module changes among the functions the call enters: {len(entered) - 1} "
          f"({len(set(entered))} modules: {', '.join(sorted(m.removeprefix('autograder.') for m in set(entered)))})")
    print(f"one call's round trip: median {latency * 1e6:.0f} us over {CALLS} calls")


if __name__ == "__main__":
    main()
