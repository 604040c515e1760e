"""`python -m autograder <command>`: release, grade, batch, check, build, audit, scaffold."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from autograder.sandbox.limits import positive_seconds   # check's too: the student release has no cli


def _cmd_release(args: argparse.Namespace) -> int:
    from autograder.packaging.release import main as release_main
    return release_main(args)


def _cmd_grade(args: argparse.Namespace) -> int:
    from pathlib import Path

    from autograder import contract, results
    from autograder.sandbox import SandboxConfig, startup
    from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT, default_worker_user

    # Interruptible whatever started us: a shell's background job (`cmd &`, CI runners, nohup
    # scripts) inherits SIGINT ignored, and Python then leaves it so. Ctrl-C and batch's
    # --student-timeout (SIGINT first) must still stop grading and keep the finished exercises.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        budgets = parse_budgets(args.budget)
        if args.job:                                  # batch: the paths come from a job file
            from autograder.jobs import read_job
            job = read_job(args.job)
            args.submission, args.results, args.hide = job["submission"], job["results"], job["hide"]
        if not args.submission:
            raise ValueError("a SUBMISSION (or --job) is required")
        from autograder.sandbox import levels
        levels.requested(args.isolation)          # an unknown level: say so, grade nothing
        exercises = contract.select(args.exercises)          # an unknown id: the same
    except (ValueError, OSError) as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    config = SandboxConfig(call_timeout=DEFAULT_CALL_TIMEOUT if args.timeout is None else args.timeout,
                           load_timeout=args.import_timeout, memory_mb=args.memory_mb,
                           user=default_worker_user() if args.worker_user is None else args.worker_user,
                           hide=[str(Path(h).resolve()) for h in args.hide])
    if getattr(args, "isolation", None):
        config.isolation = args.isolation
    if args.results:                  # before anything starts (grade() writes it too, for its other callers)
        results.write_atomic(Path(args.results), results.placeholder())
    # the zygote loads what workers need while the engine is imported (startup.start_zygote_early)
    startup.start_zygote_early(config, in_process=args.in_process, warm_up=exercises[0].warm_up if exercises else ())
    from autograder.grading import GradeRequest, grade
    request = GradeRequest(submission=Path(args.submission),
                           results_path=Path(args.results) if args.results else None,
                           exercises=exercises, config=config,
                           in_process=args.in_process, budgets=budgets)
    if args.exercise_budget is not None:
        request.default_budget = args.exercise_budget
    if not os.path.lexists(args.submission):      # a mistyped path: graded (results.json stays sure), and said
        print(f"grade: {args.submission} does not exist: every exercise is graded as missing", file=sys.stderr)
    outcome = grade(request)
    print(outcome.output)
    for test in outcome.tests:
        if not test.passed:
            print(failure_line(test))
    not_run = [o.exercise for o in outcome.exercises if o.status is results.ExerciseStatus.NOT_RUN]
    if not_run:                 # the machine could not grade them: not a result to record
        print(f"grade: not graded, the sandbox could not start: {', '.join(not_run)} (see above)", file=sys.stderr)
        return NOT_GRADED_EXIT
    return 0


NOT_GRADED_EXIT = 3             # `grade`: some exercise was not run (results.json says which and why)


def failure_line(test) -> str:
    """A failed test in ``grade``'s terminal summary: its name, the first line of its message
    (shortened: the full text is in results.json; a first line that only announces what
    follows, ending in ":", takes the next line along) and, in full, its likely cause (the
    kit's own sentences, from the cause ids: never cut, they are what the student should read)."""
    from autograder import results
    from autograder.diagnosis.causes import text_of_ids

    lines = test.output.splitlines() if test.output else [""]
    first = lines[0]
    if first.rstrip().endswith(":") and len(lines) > 1 and not lines[1].startswith("Likely cause:"):
        first = first.rstrip() + " " + lines[1].strip()
    line = f"  ✗ {results.one_line(test.name, 200)}: {results.one_line(first, 160)}"
    if test.cause:
        line += "\n      Likely cause: " + text_of_ids(test.cause).replace("\n", "\n      ")
    return line


def parse_budgets(text: str | None) -> dict[str, float]:
    """``"ex5=120,ex2=30"`` -> ``{"ex5": 120.0, "ex2": 30.0}`` (seconds per exercise); a
    malformed part or an exercise the kit does not know is a ValueError (a typo must not leave
    an exercise on the default budget unnoticed)."""
    from autograder import contract

    out: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not sep or not 0 < seconds < float("inf"):
            raise ValueError(f"--budget: expected EXERCISE=SECONDS (SECONDS > 0), got {part.strip()!r}")
        if key.strip() not in contract.BY_ID:
            raise ValueError(f"--budget: unknown exercise {key.strip()!r}; known: {', '.join(contract.BY_ID)}")
        out[key.strip()] = seconds
    return out


def _release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true",
                   help="only report whether assignments/ is up to date (exit 1 if not)")
    p.add_argument("--root", default=None,
                   help="repository holding solutions/ (default: the one this kit is in)")
    p.add_argument("--out", default=None,
                   help="where to write the release (default: ROOT/assignments)")
    p.set_defaults(func=_cmd_release)


def positive_int(text: str) -> int:
    """An argparse type: a whole number above 0 (jobs, megabytes)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return value


def add_time_arguments(p: argparse.ArgumentParser) -> None:
    """The time limits of one grading besides ``--timeout``: ``grade``'s, and ``batch``'s, which
    hands them to every grader (checked there with :func:`parse_budgets`)."""
    p.add_argument("--import-timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="seconds to import one student file, its top-level code (a notebook's cells) "
                        "included (default: the larger of --timeout and 20)")
    p.add_argument("--budget", default=None, metavar="EX=SECONDS,…",
                   help="time budget of some exercises' tests, <exercise id>=<seconds> (see --exercise-budget)")
    p.add_argument("--exercise-budget", type=positive_seconds, default=None, metavar="SECONDS",
                   help="time budget for all the tests of one exercise (default: 70 s each); once "
                        "spent, its remaining tests fail and the other exercises are graded normally")


def _grade_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submission", nargs="?")
    p.add_argument("--job", default=None, help=argparse.SUPPRESS)   # batch: a job file with the paths
    p.add_argument("--exercises", default=None, help="comma list of exercise ids (default: the default assignment)")
    p.add_argument("--results", default=None, help="write Gradescope results.json here")
    # --timeout and --worker-user: None means autograder.sandbox.limits' defaults (imported
    # only by `grade`: the sandbox package prepares the grader's config folders when imported)
    p.add_argument("--timeout", type=positive_seconds, default=None,
                   help="seconds per call into student code")
    add_time_arguments(p)
    p.add_argument("--memory-mb", type=positive_int, default=1024, help="extra memory the worker may use")
    p.add_argument("--worker-user", default=None,
                   help="unprivileged user the student's code runs as, when root (created on demand; "
                        "`batch` gives each parallel job its own)")
    p.add_argument("--hide", action="append", default=[], metavar="FOLDER",
                   help="a folder the worker must not see besides the kit's (repeatable; `batch` "
                        "passes the class folder)")
    p.add_argument("--isolation", default="auto", metavar="LEVEL",
                   help="isolation level for the student's code (default: the strongest this machine "
                        "allows, or AUTOGRADER_ISOLATION; the README lists the levels); a level "
                        "stronger than that is refused")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)   # benchmarks only
    p.set_defaults(func=_cmd_grade)


def _module_arguments(module: str, add: str = "add_arguments", run: str = "command"):
    """A subcommand whose arguments and entry point live in ``module`` (imported when chosen)."""
    def configure(p: argparse.ArgumentParser) -> None:
        import importlib
        mod = importlib.import_module(module)
        getattr(mod, add)(p)
        p.set_defaults(func=getattr(mod, run))
    return configure


# Each subcommand: its one-line help and what adds its arguments. Only the chosen one is
# configured, so `grade` (Gradescope's path) imports nothing of batch, Dask, the Docker
# replica, the audit or the scaffold.
COMMANDS = {
    "release": ("generate assignments/ (the student release) from solutions/", _release_arguments),
    "grade": ("grade one submission (folder, .zip or file) as Gradescope would", _grade_arguments),
    "batch": ("grade one sub-folder or .zip per student (or a Gradescope export) in parallel; write a "
              "gradebook CSV and a summary", _module_arguments("autograder.batch")),
    "check": ("for students: run the public tests on the files in this folder and explain failures",
              _module_arguments("autograder.check")),
    "build": ("write dist/: Gradescope autograder.zip, student release.zip, other exports",
              _module_arguments("autograder.packaging.build", run="main")),
    "audit": ("course staff, before a release: grade the solutions, stubs, mutants and correct "
              "alternatives; report what each hidden test catches (exit 1 on false failures, "
              "survivors or stub passes)", _module_arguments("autograder.audit")),
    "scaffold": ("the skeleton of a new exercise (docs/ADDING_AN_EXERCISE.md)",
                 _module_arguments("autograder.scaffold", run="main")),
}


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``chosen``, only that subcommand's arguments are added (and its
    module imported): the others are listed by name and help only."""
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="Attention-mechanisms autograding kit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, configure) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if chosen is None or name == chosen:
            configure(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(chosen).parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
