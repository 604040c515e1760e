"""`python -m autograder check [ex1 …]`: students run the public tests on their own files.

This runs inside the student release (the unzipped ``assignments/``: ``ex1_attention/``, …,
and ``autograder/``, the student-side runtime that ``python -m autograder release`` ships,
see :mod:`autograder.packaging.release.student_runtime`). It needs no root and none of the
instructor's files (no hidden suites, no ``reference/``, no solutions): it is ``grade``'s
own code path (intake -> worker process -> pytest with the grading plugin) restricted to
``@pytest.mark.public`` tests, and always isolated by process only, since a student
checking their own files has nobody to be protected from.

It prints, per exercise, the public tests' verdicts and what they are worth in the real grade
(the hidden tests decide the rest), every failure with its message (including the likely
cause when the test names one), what the hidden tests additionally cover, in general terms
(:attr:`Exercise.hidden_coverage`), never the hidden tests themselves, and the isolation used.

Platforms: on Linux the worker is forked from a zygote; where ``fork`` is missing (Windows)
or unsafe after torch is loaded (macOS), and in notebooks, it is a fresh interpreter
(:mod:`autograder.sandbox.spawn`); every call has a time limit everywhere.

Entry points: ``python -m autograder check`` in the release folder; ``python check.py`` from
any exercise folder (a launcher the release writes, it finds the release root by walking up);
:func:`notebook_check` in each notebook's last cell; ``pytest`` (the release's
``conftest.py`` loads :mod:`autograder.student_pytest`). In the student release this module
is also the whole command line: ``autograder/cli.py`` only re-exports :func:`main`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import TextIO

import autograder
from autograder import contract
from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT as DEFAULT_TIMEOUT, positive_seconds

RUNTIME_DIR = Path(autograder.__file__).resolve().parent
SUITES_DIR = RUNTIME_DIR / "suites"
# {ex id: {"public": weight, "all": weight, "points": total}}: what the public tests weigh in the
# real grade, and the exercise's total there (`build --points` writes its own into the release
# it zips). Written by the release (the student runtime has no hidden suites to count); the kit counts.
WORTH_FILE = SUITES_DIR / "public_worth.json"
WIDTH = 92
MESSAGE_LIMIT = 1500          # characters of one failure message shown

# What check says the hidden tests check when an exercise gives no note of its own
# (``Exercise.hidden_coverage``, in the exercise's folder): themes, never tests or values.
GENERIC_COVERAGE = ("values against a reference implementation on other shapes and seeds, edge "
                    "cases, gradients and the exercise's rules.")


def hidden_coverage(ex: contract.Exercise) -> str:
    """What the hidden tests of ``ex`` check besides the public ones: the exercise's own note
    (``Exercise.hidden_coverage``), else a generic one."""
    return ex.hidden_coverage or GENERIC_COVERAGE


# --------------------------------------------------------------------------- choosing exercises

def public_exercises() -> tuple[contract.Exercise, ...]:
    """Exercises whose public tests are present next to this runtime."""
    return tuple(ex for ex in contract.EXERCISES
                 if any((SUITES_DIR / ex.folder / "public").glob("test_*.py")))


def select_public(names: list[str]) -> tuple[contract.Exercise, ...]:
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

def find_release_root(start: Path | str = ".") -> Path:
    """The release folder at or above ``start``: the first that holds an exercise folder.

    So that a student inside ``ex1_attention/`` (or its ``tests/``) checks the release they
    are in. ``start`` itself when nothing above it looks like a release."""
    start = Path(start).resolve()
    folders = {ex.folder for ex in contract.EXERCISES}
    for folder in (start, *start.parents):
        if any((folder / name).is_dir() for name in folders):
            return folder
    return start


def run_check(folder: Path | str = ".", names: list[str] | None = None, *, verbose: bool = False,
              timeout: float = DEFAULT_TIMEOUT, out: TextIO | None = None,
              in_process: bool | None = None, worker_start: str = "auto") -> int:
    """Grade ``folder`` with the public tests and print the report. 0 when every test passed.

    ``worker_start``: ``"auto"`` forks a worker on Linux and starts a fresh interpreter
    where fork is missing or unsafe (Windows, macOS), see :mod:`autograder.sandbox.spawn`;
    ``"spawn"``/``"fork"`` force one. ``in_process``: run the student's code in this
    process (no worker, no time limits): tests and benchmarks only.
    """
    out = out or sys.stdout
    try:
        exercises = select_public(list(names or []))
    except ValueError as exc:
        print(f"check: {exc}", file=out)
        return 2
    if not exercises:
        print("check: this copy of the kit has no public tests", file=out)
        return 2
    outcome = run_public_tests(folder, exercises, timeout=timeout, in_process=bool(in_process),
                               worker_start=worker_start, out=out, verbose=verbose)
    if outcome is None:
        return 2
    return 0 if outcome.tests and all(t.passed for t in outcome.tests) else 1


def run_public_tests(folder: Path | str, exercises, *, timeout: float = DEFAULT_TIMEOUT,
                     in_process: bool = False, worker_start: str = "auto",
                     out: TextIO | None = None, verbose: bool = False):
    """Run ``exercises``' public tests on the files in ``folder``, print the report to ``out``
    and return the outcome (``None`` when nothing could be checked: the reason is printed)."""
    out = out or sys.stdout
    from autograder import intake
    from autograder.grading import GradeRequest, grade
    from autograder.sandbox import SandboxConfig, levels, startup
    folder = find_release_root(folder)
    submission = intake.collect(folder, exercises)
    if not any(f.origin for f in submission.found.values()):
        print(f"check: none of {', '.join(ex.filename for ex in exercises)} is in {folder}.\n"
              "Run this command in the folder you unzipped (the one that holds "
              f"{', '.join(ex.folder + '/' for ex in contract.EXERCISES[:2])}, …) or in one of its "
              "exercise folders, or pass --folder PATH.",
              file=out)
        return None
    # A self-check: process isolation with limits, never a second user or namespaces.
    config = SandboxConfig(call_timeout=timeout, isolation="process", worker_start=worker_start)
    isolation = ("your code ran inside this process (no worker process, no time limits)"
                 if in_process else startup.describe_start(config))
    if verbose:
        print(f"kit runtime: {RUNTIME_DIR}", file=out)
        print(f"python: {sys.executable}", file=out)
        print(f"isolation: {isolation}", file=out)
    print(f"Checking your files in {folder} with the public tests …", file=out)
    if in_process:
        import matplotlib
        matplotlib.use("Agg")                      # no windows popping up from plt.show()
        print("(your code runs inside this process here: no time limits; press Ctrl-C if it hangs)",
              file=out)
    out.flush()
    with levels.silenced():                       # the isolation is said below, in the student's words
        outcome = grade(GradeRequest(submission=folder, exercises=exercises, config=config,
                                     public_only=True, in_process=in_process, collected=submission))
    print(render(outcome, submission, exercises, verbose=verbose, isolation=isolation,
                 worth=public_worth(exercises)), file=out)
    return outcome


def notebook_check(folder: Path | str, exercise: str, *, timeout: float = DEFAULT_TIMEOUT,
                   worker_start: str = "spawn") -> bool:
    """The last cell of an exercise notebook: run its public tests on the saved file, print the
    report (passed/failed per test, messages, "N of M passed"). Never raises on a failure:
    True when every public test passed.

    The worker is always a fresh interpreter here: forking a Jupyter kernel (threads, a
    running event loop) is unsafe on every platform."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        exercises = select_public([exercise])
    except ValueError as exc:
        print(f"check: {exc}")
        return False
    outcome = run_public_tests(folder, exercises, timeout=timeout, worker_start=worker_start,
                               out=sys.stdout)
    return bool(outcome is not None and outcome.tests and all(t.passed for t in outcome.tests))


# --------------------------------------------------------------------------- what public tests are worth

def public_worth(exercises) -> dict[str, tuple[float, float, float]]:
    """``{ex id: (weight of its public tests, weight of all its tests, the exercise's total)}``;
    ``{}`` if unknown.

    The release ships :data:`WORTH_FILE` (the totals of the build that zipped it); in the
    instructor's kit the suites are counted and the totals are the exercises' own."""
    try:
        if WORTH_FILE.is_file():
            data = json.loads(WORTH_FILE.read_text(encoding="utf-8"))
            own = {ex.id: ex.points for ex in contract.EXERCISES}
            return {k: (float(v["public"]), float(v["all"]), float(v.get("points", own.get(k, 0.0))))
                    for k, v in data.items()}
        return {k: (*w, contract.BY_ID[k].points) for k, w in count_weights(exercises).items()}
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return {}


def count_weights(exercises, suites_dir: Path | None = None) -> dict[str, tuple[float, float]]:
    """The ``points`` weights of the public tests and of all tests of ``exercises`` (in
    ``suites_dir``, default: this kit's), from the engine's one collection
    (:func:`autograder.grading.collect`)."""
    from autograder.grading import collect

    weights: dict[str, list[float]] = {}
    for record in collect(tuple(exercises), suites_dir=suites_dir):
        row = weights.setdefault(record.exercise, [0.0, 0.0])
        row[1] += record.weight
        if record.public:
            row[0] += record.weight
    return {ex: (w[0], w[1]) for ex, w in weights.items() if w[1] > 0}


def _total(ex: contract.Exercise, worth: dict) -> float:
    """``ex``'s total in the real grade: the one :func:`public_worth` read, else its own."""
    known = worth[ex.id]
    return float(known[2]) if len(known) > 2 else ex.points


def _public_share(ex: contract.Exercise, worth: dict) -> float:
    """The points of ``ex``'s public tests, as shown (2 decimals)."""
    public, everything = worth[ex.id][:2]
    return round(_total(ex, worth) * public / everything, 2) if everything else 0.0


def _worth_line(ex: contract.Exercise, passed: int, total: int, worth: dict) -> str:
    """``public tests: 3 of 4 passed (worth 2.5 of ex1's 20 points; the hidden tests decide the other 17.5)``"""
    line = f"  public tests: {passed} of {total} passed"
    if ex.id not in worth:
        return line
    share, total = _public_share(ex, worth), _total(ex, worth)
    return (line + f" (worth {share:g} of {ex.id}'s {total:g} points; "
            f"the hidden tests decide the other {round(total - share, 2):g})")


def render(outcome, submission, exercises, *, verbose: bool = False, isolation: str = "",
           worth: dict[str, tuple[float, ...]] | None = None) -> str:
    """The student-facing report: per exercise, the public tests' verdicts and what they are
    worth in the real grade, failures explained, hidden coverage; then the totals and (when
    given) the isolation that was used. ``worth``: see :func:`public_worth`."""
    worth = worth or {}
    lines: list[str] = []
    passed_total = sum(t.passed for t in outcome.tests)
    for ex in exercises:
        tests = [t for t in outcome.tests if t.exercise == ex.id]
        found = submission.found.get(ex.id)
        where = found.origin if found and found.origin else f"{ex.filename} not found"
        lines += ["", f"{ex.id} · {ex.title} — {where}",
                  _worth_line(ex, sum(t.passed for t in tests), len(tests), worth)]
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
        coverage = hidden_coverage(ex)
        lines += textwrap.wrap("Hidden tests also check: " + coverage, WIDTH,
                               initial_indent="  ", subsequent_indent="    ")
    lines += ["", f"Public tests: {passed_total} of {len(outcome.tests)} passed."]
    known = [ex for ex in exercises if ex.id in worth]
    if known:
        total = sum(_total(ex, worth) for ex in known)
        share = round(sum(_public_share(ex, worth) for ex in known), 2)     # the lines above add up to it
        lines.append(f"They are worth {share:g} of the {total:g} points of the real grade; the "
                     f"hidden tests decide the other {round(total - share, 2):g}.")
    lines += ["Your grade comes from the hidden tests too, which run when you submit: passing the "
              "public tests", "is necessary, not sufficient."]
    if isolation:
        lines.append(f"Isolation: {isolation}.")
    return "\n".join(lines)


def _load_problem(outcome, ex: contract.Exercise, found) -> str | None:
    """Why the exercise's file could not be used or was not fully checked (missing, refused,
    syntax error, import error, crashed, out of time), from the engine's structured
    per-exercise outcome (``outcome.exercises``), never from test messages."""
    exercise = next((o for o in getattr(outcome, "exercises", None) or [] if o.exercise == ex.id), None)
    if exercise is not None:
        from autograder.results import ExerciseStatus
        return exercise.message if exercise.status is not ExerciseStatus.GRADED and exercise.message else None
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
                        help=f"exercise ids ({', '.join(contract.example_ids())}, …), or all "
                             "(default: every exercise in this release)")
    parser.add_argument("--folder", default=".",
                        help="the release folder holding the exercise folders, or any folder "
                             "inside it (default: here)")
    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT,
                        help="seconds one call into your code may take")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also show where the checking kit and Python are, and the isolation")
    parser.add_argument("--worker-start", choices=("auto", "fork", "spawn"), default="auto",
                        help=argparse.SUPPRESS)   # auto: spawn where fork is missing/unsafe
    parser.add_argument("--in-process", action="store_true", default=None,
                        help=argparse.SUPPRESS)   # no worker at all (tests, benchmarks)


def _printable_everywhere() -> None:
    """A Windows console redirected to a file encodes with the ANSI code page (cp1252), which
    has no ✓ or ✗: replace what cannot be encoded rather than crash mid-report."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "✓✗·—…".encode(getattr(stream, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):
            try:
                stream.reconfigure(errors="replace")       # type: ignore[union-attr]
            except (AttributeError, ValueError):
                pass


def command(args: argparse.Namespace) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    _printable_everywhere()
    names = [n for n in args.exercises if n.lower() != "all"]
    return run_check(args.folder, names, verbose=args.verbose, timeout=args.timeout,
                     in_process=args.in_process, worker_start=args.worker_start)


def main(argv: list[str] | None = None) -> int:
    """The student release's ``python -m autograder`` (and ``check.py``): ``check`` only."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Check your exercise files with the public tests (run it anywhere in the "
                    "unzipped release folder).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="run the public tests on your files and explain failures")
    add_arguments(p)
    p.set_defaults(func=command)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
