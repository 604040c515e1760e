"""`python -m autograder check [ex1 …]`: students run the public tests on their own files.

This runs inside the student release (the unzipped ``assignments/``: ``ex1_attention/``, …,
and ``autograder/``, the student-side runtime that ``python -m autograder release`` ships,
see :mod:`autograder.packaging.student_runtime`). It needs no root and none of the
instructor's files (no hidden suites, no ``reference/``, no solutions): it is ``grade``'s
own code path (intake -> worker process -> pytest with the grading plugin) restricted to
``@pytest.mark.public`` tests, and always isolated by process only, since a student
checking their own files has nobody to be protected from.

It prints, per exercise, the public score, every failure with its message (including the
likely cause when the test names one), and what the hidden tests additionally cover, in
general terms (:data:`HIDDEN_COVERAGE`), never the hidden tests themselves.

In the student release this module is also the whole command line: the release's
``autograder/cli.py`` only re-exports :func:`main`, which knows the ``check`` command alone.
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import TextIO

import autograder
from autograder import contract

RUNTIME_DIR = Path(autograder.__file__).resolve().parent
SUITES_DIR = RUNTIME_DIR / "suites"
WIDTH = 92
MESSAGE_LIMIT = 1500          # characters of one failure message shown

# What the hidden tests check besides the public ones: themes, never tests or values.
HIDDEN_COVERAGE: dict[str, str] = {
    "ex1": ("values against a reference implementation on other shapes, batch dimensions and "
            "seeds, in float32 and float64; softmax along any axis and on extreme inputs; masks "
            "of several shapes broadcast over batches and queries; the NumPy backward pass and "
            "numerical_gradient on other functions; the torch version's dtype and gradients; "
            "inputs left unchanged; the rules (no banned APIs, NumPy-only functions)."),
    "ex2": ("the heatmap's orientation, ticks, axis labels, colour limits, colorbar and title on "
            "other (non-square) weights and tokens, drawing into a given Axes, torch inputs; the "
            "head grid's layout, titles and hidden cells; top_attended's ordering and ties."),
    "ex3": ("split_heads and combine_heads on other shapes and dtypes; the module's exact "
            "parameters (with and without bias); outputs and per-head weights against a reference "
            "implementation for self- and cross-attention, with masks of several shapes, in "
            "float32 and float64; gradients reaching every parameter; the rules (no built-in "
            "multi-head attention)."),
    "ex4": ("masks of other sizes, devices and dtypes; causal self-attention values and gradients "
            "against a reference implementation, with no information flowing from later tokens; "
            "attend_next agreeing with full causal attention step by step; greedy_generate on "
            "other models and prompts, including ties and edge cases; inputs left unchanged; "
            "the rules (no built-in attention or transformer layers)."),
    "ex5": ("the dataset's exact tokens and labels; both models' structure and values against "
            "a reference implementation; input-gradient norms and the vanishing-gradient effect "
            "on long sequences; train's optimiser, learning rate and recorded losses; accuracy; "
            "the attention model learning the recall task with the kit's own training loop; the "
            "rules (attention written by hand)."),
}
GENERIC_COVERAGE = ("values against a reference implementation on other shapes and seeds, edge "
                    "cases, gradients and the exercise's rules.")


# --------------------------------------------------------------------------- choosing exercises

def public_exercises() -> tuple[contract.Exercise, ...]:
    """Exercises whose public tests are present next to this runtime."""
    return tuple(ex for ex in contract.EXERCISES
                 if any((SUITES_DIR / ex.folder / "public").glob("test_*.py")))


def select(names: list[str]) -> tuple[contract.Exercise, ...]:
    """``["ex1", "3", "ex4_causal_mask"]`` -> exercises; all with public tests when empty."""
    available = public_exercises()
    if not names:
        return available
    chosen: list[contract.Exercise] = []
    for raw in ",".join(names).split(","):
        name = raw.strip().rstrip("/")
        if not name:
            continue
        ex = (contract.BY_ID.get(name) or contract.BY_ID.get(f"ex{name}")
              or next((e for e in contract.EXERCISES if name in (e.folder, e.module, e.filename)), None))
        if ex is None:
            raise ValueError(f"unknown exercise {name!r}; choose from "
                             + ", ".join(e.id for e in contract.EXERCISES))
        if ex not in available:
            raise ValueError(f"{ex.id} has no public tests in this release")
        if ex not in chosen:
            chosen.append(ex)
    return tuple(chosen)


# --------------------------------------------------------------------------- running

def worker_process_supported() -> bool:
    """The worker is forked from a zygote over SOCK_SEQPACKET and limited via /proc: Linux only."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def run_check(folder: Path | str = ".", names: list[str] | None = None, *, verbose: bool = False,
              timeout: float = 20.0, out: TextIO | None = None, in_process: bool | None = None) -> int:
    """Grade ``folder`` with the public tests and print the report. 0 when every test passed.

    ``in_process``: run the student's code in this process (no worker, no time limits); the
    default is to do so only where the worker cannot run (macOS).
    """
    out = out or sys.stdout
    try:
        from autograder import intake
        from autograder.grading import GradeRequest, grade
        from autograder.sandbox import SandboxConfig
    except ImportError as exc:                     # e.g. Windows: no `resource`, no `pwd`
        print(f"check: this system cannot run the checker ({exc}). It needs Linux or macOS; on "
              "Windows, use WSL (Windows Subsystem for Linux).", file=out)
        return 2
    if in_process is None:
        in_process = not worker_process_supported()
    folder = Path(folder).resolve()
    try:
        exercises = select(list(names or []))
    except ValueError as exc:
        print(f"check: {exc}", file=out)
        return 2
    if not exercises:
        print("check: this copy of the kit has no public tests", file=out)
        return 2
    submission = intake.collect(folder, exercises)
    if not any(f.origin for f in submission.found.values()):
        print(f"check: none of {', '.join(ex.filename for ex in exercises)} is in {folder}.\n"
              "Run this command in the folder you unzipped (the one that holds ex1_attention/, "
              "ex2_visualization/, …), or pass --folder PATH.", file=out)
        return 2
    if verbose:
        print(f"kit runtime: {RUNTIME_DIR}", file=out)
        print(f"python: {sys.executable}", file=out)
    print(f"Checking your files in {folder} with the public tests …", file=out)
    if in_process:
        import matplotlib
        matplotlib.use("Agg")                      # no windows popping up from plt.show()
        print("(your code runs inside this process here: no time limits; press Ctrl-C if it hangs)",
              file=out)
    out.flush()
    # A self-check: process isolation with limits, never a second user or namespaces.
    config = SandboxConfig(call_timeout=timeout, isolate=False)
    outcome = grade(GradeRequest(submission=folder, exercises=exercises, config=config,
                                 public_only=True, in_process=in_process))
    print(render(outcome, submission, exercises, verbose=verbose, in_process=in_process), file=out)
    return 0 if outcome.tests and all(t.passed for t in outcome.tests) else 1


def render(outcome, submission, exercises, *, verbose: bool = False, in_process: bool = False) -> str:
    """The student-facing report: per exercise, the score, failures explained, hidden coverage."""
    lines: list[str] = []
    per_ex = outcome.by_exercise()
    passed_total = sum(t.passed for t in outcome.tests)
    for ex in exercises:
        tests = [t for t in outcome.tests if t.exercise == ex.id]
        found = submission.found.get(ex.id)
        score, max_score = per_ex.get(ex.id, (0.0, 0.0))
        where = found.origin if found and found.origin else f"{ex.filename} not found"
        lines += ["", f"{ex.id} · {ex.title} — {where}",
                  f"  public tests: {sum(t.passed for t in tests)} of {len(tests)} passed"
                  f" · {score:g} / {max_score:g} points"]
        unavailable = _load_problem(outcome, ex, found)
        if unavailable:
            lines += _indent(unavailable, "  ! ", "    ")
        for note in (found.notes if found else []):
            lines.append(f"  note: {note}")
        for t in tests:
            title = t.title.removeprefix("public: ")
            if t.passed:
                lines.append(f"  ✓ {title}")
                continue
            lines.append(f"  ✗ {title}")
            if t.output.strip() != (unavailable or "").strip():
                message = t.output if len(t.output) <= MESSAGE_LIMIT else t.output[:MESSAGE_LIMIT] + " …"
                lines += _indent(message or "failed", "      ")
        coverage = HIDDEN_COVERAGE.get(ex.id, GENERIC_COVERAGE)
        lines += textwrap.wrap("Hidden tests also check: " + coverage, WIDTH,
                               initial_indent="  ", subsequent_indent="    ")
    lines += ["", f"Public tests: {passed_total} of {len(outcome.tests)} passed · "
                  f"{outcome.score:g} / {outcome.max_score:g} points.",
              "Your grade comes from the hidden tests, which run when you submit: passing the "
              "public tests", "is necessary, not sufficient."]
    if verbose:
        lines.append("isolation: " + ("your code ran inside this process (no worker process on this "
                                      "system)" if in_process else
                                      "your code ran in a separate worker process with time and "
                                      "memory limits (a self-check: no user or namespace isolation)"))
    return "\n".join(lines)


def _load_problem(outcome, ex: contract.Exercise, found) -> str | None:
    """Why the exercise's file could not be used or was not fully checked (missing, refused,
    syntax error, import error, crashed, out of time), from the engine's structured
    per-exercise outcome (``outcome.exercises``), never from test messages."""
    exercise = next((o for o in getattr(outcome, "exercises", None) or [] if o.exercise == ex.id), None)
    if exercise is not None:
        return exercise.message if exercise.status != "graded" and exercise.message else None
    return found.problem if found is not None and found.problem else None


def _indent(text: str, prefix: str, rest: str | None = None) -> list[str]:
    """``text`` wrapped, first line after ``prefix``, every other line after ``rest``."""
    rest = " " * len(prefix) if rest is None else rest
    out: list[str] = []
    for raw in text.splitlines() or [""]:
        lead = len(raw) - len(raw.lstrip())
        wrapped = textwrap.wrap(raw.strip(), WIDTH - len(rest) - lead, break_long_words=False,
                                break_on_hyphens=False) or [""]
        out += [" " * lead + w for w in wrapped]
    return [(prefix if i == 0 else rest) + line for i, line in enumerate(out)]


# --------------------------------------------------------------------------- command line

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercises", nargs="*", metavar="EXERCISE",
                        help="ex1 … ex5 (default: every exercise)")
    parser.add_argument("--folder", default=".",
                        help="the release folder holding ex1_attention/, … (default: here)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds one call into your code may take")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also show where the checking kit and Python are")
    parser.add_argument("--in-process", action="store_true", default=None,
                        help=argparse.SUPPRESS)   # the macOS path, on Linux (tests)


def command(args: argparse.Namespace) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    return run_check(args.folder, args.exercises, verbose=args.verbose, timeout=args.timeout,
                     in_process=args.in_process)


def main(argv: list[str] | None = None) -> int:
    """The student release's ``python -m autograder``: the ``check`` command only."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Check your exercise files with the public tests (run it in the unzipped release folder).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="run the public tests on your files and explain failures")
    add_arguments(p)
    p.set_defaults(func=command)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
