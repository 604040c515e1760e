"""`python -m autograder release`: generate the student release ``assignments/`` from ``solutions/``.

For every exercise in :data:`autograder.contract.EXERCISES` (opt-in ones too), ``solutions/<folder>/`` holds

* ``<module>.py``      the completed file, solution regions between ``### BEGIN SOLUTION``
                       and ``### END SOLUTION``;
* ``<folder>.ipynb``   the companion teaching notebook (optional exercise cells carry
                       nbgrader markers and metadata);
* ``README.md``        the exercise's short README; the line ``<!-- release:rules -->`` is
                       replaced by rules rendered from the contract (appended if absent).

and the release writes ``assignments/<folder>/`` (stub, notebook, README, public tests)
plus ``assignments/README.md``. The work is a pipeline of small named steps in the style
of nbgrader's preprocessors: each step reads and updates an :class:`ExerciseJob`, and any
step can be replaced or reordered by passing ``steps=`` to :func:`build_release`.

Everything is computed in memory first (:func:`build_release`), then written
(:func:`write_release`) or compared with the disk (:func:`compare_release`, behind
``--check``). The output is a pure function of the sources: no timestamps, notebook cell
ids fixed from the cell's position, JSON keys sorted. Running it twice is byte-identical.

This package's front door holds the pipeline and the command; each piece has its module:

    model.py            the data the steps share (ExerciseJob, Release, Step, ReleaseError)
    steps.py            the steps (StripSolutions … ShipCheckRuntime), DEFAULT_STEPS, notebook
                        normalisation
    markers.py          ``### BEGIN/END SOLUTION`` regions: find, strip, prove
    leaks.py            leak scanning: no solution text or marker reaches a student
    readmes.py          the READMEs' rules and advice, rendered from the contract
    entrypoints.py      the small generated files (check.py launchers, conftest, notebook cells)
    student_runtime.py  the part of the kit shipped for ``check``
    sync.py             the release on disk: compare, write, the summary
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from autograder import repo_root
from autograder.contract import Exercise, select
from autograder.packaging.release.leaks import find_leaks
from autograder.packaging.release.model import ExerciseJob, Release, ReleaseError, Step
from autograder.packaging.release.readmes import render_overview
from autograder.packaging.release.steps import DEFAULT_STEPS
from autograder.packaging.release.sync import compare_release, summary, write_release

# The front door: what the command line, the build and the tests use.
__all__ = ["DEFAULT_STEPS", "Release", "ReleaseError", "Step", "build_release", "compare_release",
           "main", "release_exercise", "write_release"]


# ------------------------------------------------------------------------------ pipeline


def release_exercise(ex: Exercise, root: Path, steps: Sequence[Step] = DEFAULT_STEPS) -> ExerciseJob:
    job = ExerciseJob(exercise=ex, source_dir=root / "solutions" / ex.folder, root=root)
    for step in steps:
        step(job)
    return job


def build_release(root: Path | None = None, exercises: str | list[str] | None = None,
                  steps: Sequence[Step] = DEFAULT_STEPS) -> Release:
    """The release in memory. :class:`ReleaseError` when a source is missing or leaks.

    ``exercises=None``: every exercise the kit knows, opt-in ones included (``assignments/``
    is the source of every assignment; ``build`` zips the part it builds)."""
    root = Path(root) if root else repo_root()
    try:
        chosen = select(exercises or "all")
    except ValueError as exc:
        raise ReleaseError(str(exc)) from None
    jobs = [release_exercise(ex, root, steps) for ex in chosen]
    files: dict[str, str] = {}
    for job in jobs:
        for rel, text in job.files.items():
            files[f"{job.exercise.folder}/{rel}"] = text
    files["README.md"] = render_overview([job.exercise for job in jobs])
    public = {f"{j.exercise.folder}/{p}" for j in jobs for p in j.public}
    for step in steps:                                  # release-wide steps (ShipCheckRuntime)
        if callable(getattr(step, "finish", None)):
            extra, copied = step.finish(root, jobs)
            files.update(extra)
            public |= copied
    # Across exercises: no exercise's solution text in another exercise's files.
    problems = find_leaks(files, [s for j in jobs for s in j.secrets], skip=public)
    if problems:
        raise ReleaseError("solution text in the release:\n  " + "\n  ".join(problems))
    return Release(files=dict(sorted(files.items())), jobs=jobs)


def main(args: argparse.Namespace | None = None) -> int:
    """Entry point of ``python -m autograder release [--check] [--root R] [--out DIR]``."""
    root = Path(getattr(args, "root", None) or repo_root()).resolve()
    out = Path(getattr(args, "out", None) or root / "assignments").resolve()
    try:
        label = str(out.relative_to(Path.cwd()))
    except ValueError:
        label = str(out)
    try:
        release = build_release(root)                 # `release` has no --exercises: all of them
    except ReleaseError as exc:
        print(f"release failed: {exc}", file=sys.stderr)
        return 2

    if getattr(args, "check", False):
        diff = compare_release(release, out, runtime=False)
        if diff.up_to_date:
            print(f"{label}/ is up to date ({len(release.files)} files)")
            return 0
        print(f"{label}/ is out of date with solutions/:")
        for kind, paths in (("changed", diff.changed), ("missing", diff.missing),
                            ("stale", diff.stale)):
            for rel in paths:
                print(f"  {kind:<8} {label}/{rel}")
        print("run `python -m autograder release` to regenerate it")
        return 1

    diff = write_release(release, out)
    print(summary(release, label))
    print(f"  written: {len(diff.changed) + len(diff.missing)} "
          f"({len(diff.missing)} new, {len(diff.changed)} changed), "
          f"unchanged: {len(release.files) - len(diff.changed) - len(diff.missing)}, "
          f"stale removed: {len(diff.stale)}")
    return 0
