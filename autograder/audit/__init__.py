"""``python -m autograder audit``: what the hidden suites catch, before a release (course staff).

Grades, for the chosen exercises, the solutions, the stubs, every mutant and every correct
alternative the kit holds (and an instructor's own, ``--extra FOLDER``), each case once per
secret, and writes ``audit.md`` and ``audit.json``: per exercise and per test, which mutants
it kills, the survivors, the tests no mutant fails, false failures of correct code, tests a
stub passes, verdicts that change with the secret, and time per test.

The pieces: ``cases.py`` (what is graded), ``mutants.py`` (the mutant format and its
patching), ``model.py`` (secrets, tasks and gradings as types), ``grade.py`` and
``worker.py`` (grading processes, each case once per secret), ``tables.py`` (the findings),
``report.py`` (markdown and JSON).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

EPILOG = """\
exit code: 0 when every correct case (solution, alternative, correct set) keeps full marks,
every mutant is caught under every secret and fails its '# expect-fail:' test, and the stubs
pass no test; 1 when there is a false failure, a survivor (also one that survives under some
secret only), a missed expectation, a stub pass or a case that could not be graded; 2 for
bad arguments or an unreadable corpus. CI can gate a release on it.

--extra FOLDER holds an instructor's own cases in the kit's layout:
  FOLDER/<ex id>/mutants/<case>.diff        a patch of the solution (first line
                                            '# expect-fail: <words>' optional)
  FOLDER/<ex id>/alternatives/<case>.py     a whole correct file in another style
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from autograder import contract
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = (__doc__ or "").split("\n\n")[1]
    p.epilog = EPILOG
    p.add_argument("--exercises", default=None,
                   help=f"comma list, e.g. {','.join(contract.example_ids())} (default: the default assignment; "
                        "'all' adds the opt-in ones)")
    p.add_argument("--secrets", type=int, default=1, metavar="N",
                   help="grade every case under N secrets: the checkout's own and N-1 fixed sweep secrets "
                        "(default 1; 2 or more shows verdicts that change with the secret)")
    p.add_argument("--secret", action="append", default=[], metavar="HEX",
                   help="grade under exactly these secrets instead (repeatable; to replay a finding)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="J",
                   help="grading processes at once (default: the CPU count; each needs ~0.6 GB)")
    p.add_argument("--extra", default=None, metavar="FOLDER",
                   help="an instructor's own mutants and alternatives (layout below)")
    p.add_argument("--extra-only", action="store_true",
                   help="grade only the --extra folder's cases, not the kit's")
    p.add_argument("--out", default="audit-report", metavar="FOLDER",
                   help="where audit.md and audit.json go (default: ./audit-report)")
    p.add_argument("--root", default=None, help=argparse.SUPPRESS)   # another checkout (default: this kit's)
    p.add_argument("--quiet", action="store_true", help="no line per grading on stderr")


def command(args: argparse.Namespace) -> int:
    """Run the audit; the exit code says whether the suites hold (see :data:`EPILOG`)."""
    import autograder
    from autograder import contract
    from autograder.audit import cases as case_list
    from autograder.audit import grade, model, report, tables

    started = time.monotonic()
    try:
        exercises = contract.select(args.exercises)
        if args.jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
        if args.extra_only and not args.extra:
            raise ValueError("--extra-only needs --extra FOLDER")
        secrets = model.choose_secrets(args.secrets, args.secret)
        root = Path(args.root).resolve() if args.root else autograder.repo_root()
        extra = Path(args.extra).resolve() if args.extra else None
        cases = case_list.collect(root, exercises, extra, kit=not args.extra_only)
    except (ValueError, OSError) as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return 2
    if not cases:
        print("audit: no cases to grade", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="ag-audit-"))
    try:
        jobs = grade.plan(cases, secrets, grade.write_cases(cases, workdir / "cases"))
        print(f"audit: {len(cases)} cases × {len(secrets)} secrets = {len(jobs)} gradings, "
              f"{min(args.jobs, len(jobs))} at a time", file=sys.stderr, flush=True)
        gradings = grade.grade_all(jobs, args.jobs, workdir, Path(args.out) / "logs",
                                   None if args.quiet else grade.print_progress())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    findings = [tables.exercise_findings(ex.id, cases, gradings, secrets) for ex in exercises]
    audit = report.Audit(findings, cases, secrets, gradings, args.jobs, time.monotonic() - started,
                         str(extra) if extra else "")
    md, js = report.write(audit, Path(args.out))
    for line in audit.problems():
        print(f"  ✗ {line}")
    print(f"audit: {'PASS' if not audit.exit_code else 'FAIL'} in {audit.wall_seconds:.1f} s: {md}, {js}")
    return audit.exit_code
