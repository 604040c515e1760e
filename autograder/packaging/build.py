"""`python -m autograder build`: every export of the kit into ``dist/``, one named step each.

    python -m autograder build [--exercises ex1,ex3] [--points ex1=30,ex3=20] [--out dist]
                               [--only gradescope,release] [--self-grade]
                               [--torch-index URL | --torch-find-links DIR] [--seed-secret HEX]
                               [--verify docker [--base-image IMAGE] [--rebuild-image]]

``--verify docker`` then proves ``dist/autograder.zip`` in a Gradescope replica (Docker image
built by its ``setup.sh``, fresh containers at ½ CPU / 768 MB; see
:mod:`autograder.packaging.verify.replica` and :mod:`autograder.packaging.verify.replica_runs`).

The exports are the list :data:`EXPORTS` of :class:`ExportStep` (name, ``"module:function"``,
what it writes). A step's function takes the :class:`BuildContext` and returns the paths it
wrote; it is imported only when it runs, so an export's heavy dependencies (nbgrader, otter)
cost nothing to the others. To add an export, append one line to :data:`EXPORTS`::

    ExportStep("otter", "autograder.interop.otter:export", "dist/otter/ (Otter-Grader)"),
    ExportStep("nbgrader", "autograder.interop.nbgrader:export", "dist/nbgrader/ (nbgrader course)"),

Every zip is deterministic (:func:`autograder.packaging.zips.write_zip`): sorted entries, fixed
timestamps, fixed modes, no caches or bytecode, so building twice from the same tree gives
identical bytes. This module imports the steps (when they run) and the proofs it runs
afterwards (:mod:`~autograder.packaging.verify.simulate`, :mod:`~autograder.packaging.verify.replica_runs`);
none of them imports it.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from autograder import contract


@dataclass
class BuildContext:
    """What every export step shares."""
    root: Path                                   # the repository (solutions/, assignments/, ...)
    out: Path                                    # dist/
    exercises: tuple[contract.Exercise, ...]     # the assignment's exercises
    points: dict[str, float] = field(default_factory=dict)   # --points overrides (exercise id -> total)
    torch_index: str = ""                        # --torch-index: setup.sh's default torch index
    torch_find_links: str = ""                   # --torch-find-links: setup.sh's default wheel folder
    seed_secret: str = ""                        # --seed-secret: the hidden inputs' secret (default: random)
    seed_secret_pinned: bool | None = None       # given by --seed-secret (None: decided when the build starts)
    artifacts: dict[str, list[Path]] = field(default_factory=dict)   # step name -> paths written
    say: Callable[[str], None] = print

    @property
    def exercise_ids(self) -> str:
        return ",".join(ex.id for ex in self.exercises)


@dataclass(frozen=True)
class ExportStep:
    name: str
    target: str          # "package.module:function", imported when the step runs
    writes: str          # for --help and the summary

    def run(self, ctx: BuildContext) -> list[Path]:
        module, _, func = self.target.partition(":")
        return list(getattr(importlib.import_module(module), func)(ctx) or [])


# The exports, in order. Hook: other exports (otter, nbgrader) add a line here.
EXPORTS: list[ExportStep] = [
    ExportStep("release", "autograder.packaging.exports.release_zip:export",
               "dist/release.zip (the student release: assignments/ only)"),
    ExportStep("gradescope", "autograder.packaging.exports.gradescope:export",
               "dist/autograder.zip (setup.sh and run_autograder at the root)"),
    ExportStep("wheel", "autograder.packaging.exports.wheel:export",
               "dist/attention_autograder-<version>-py3-none-any.whl (the kit for grading machines)"),
    ExportStep("nbgrader", "autograder.interop.nbgrader:export", "dist/nbgrader/ (nbgrader course folder)"),
    ExportStep("otter", "autograder.interop.otter:export",
               "dist/otter/<exercise>/ (one otter assignment per exercise; zip by `otter generate`)"),
]


def remove_stale(folder: Path, kept: Iterable[str], is_export: Callable[[Path], bool]) -> list[Path]:
    """Remove the per-exercise exports in ``folder`` that this build did not write: every
    sub-folder that ``is_export`` recognises as one and whose name is not in ``kept`` (a
    previous build's exercise that is no longer built). Anything else there is left alone."""
    kept = set(kept)
    stale = sorted(p for p in Path(folder).iterdir() if p.is_dir() and p.name not in kept and is_export(p)) \
        if Path(folder).is_dir() else []
    for path in stale:
        shutil.rmtree(path)
    return stale


# --------------------------------------------------------------------------- command


def parse_points(text: str | None) -> dict[str, float]:
    """``"ex1=30,ex3=20"`` -> ``{"ex1": 30.0, "ex3": 20.0}``."""
    points: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        try:
            points[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"--points: expected EXERCISE=TOTAL, got {part.strip()!r}")
    return points


def build(ctx: BuildContext, only: Iterable[str] | None = None) -> BuildContext:
    names = [s.name for s in EXPORTS]
    only = list(only) if only else names
    unknown = [n for n in only if n not in names]
    if unknown:
        raise ValueError(f"unknown export(s): {', '.join(unknown)}; known: {', '.join(names)}")
    ctx.out.mkdir(parents=True, exist_ok=True)
    if ctx.seed_secret_pinned is None:
        ctx.seed_secret_pinned = bool(ctx.seed_secret)
    if not ctx.seed_secret:                 # one fresh secret for the whole build: zip and wheel share it
        from autograder import seeds
        ctx.seed_secret = seeds.new_secret()
    for step in EXPORTS:
        if step.name in only:
            ctx.artifacts[step.name] = step.run(ctx)
    return ctx


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--exercises", default=None, help=f"comma list, e.g. {','.join(contract.example_ids())} (default: all)")
    p.add_argument("--points", default=None,
                   help="override exercise totals in this build, e.g. "
                        f"{','.join(f'{i}={20 + 10 * n}' for n, i in enumerate(contract.example_ids()))} "
                        "(default: each exercise's `points`, in its suites/<folder>/exercise.py)")
    p.add_argument("--out", default="dist", help="output folder (default: dist)")
    p.add_argument("--only", default=None,
                   help="comma list of exports: " + ", ".join(f"{s.name} ({s.writes})" for s in EXPORTS))
    p.add_argument("--self-grade", action="store_true",
                   help="then grade the solutions and the stubs with dist/autograder.zip as Gradescope "
                        "would (as root: private mount namespace, tmpfs /autograder) and print the scores")
    p.add_argument("--python", default=None,
                   help="interpreter for --self-grade's run_autograder (default: this one)")
    p.add_argument("--torch-index", default=None, metavar="URL",
                   help="setup.sh installs torch from this index instead of PyTorch's CPU index "
                        "(AUTOGRADER_TORCH_INDEX at image build overrides it)")
    p.add_argument("--torch-find-links", default=None, metavar="DIR",
                   help="setup.sh installs torch from this wheel folder on the image-build machine, "
                        "absolute or relative to /autograder/source (AUTOGRADER_TORCH_FIND_LINKS overrides it)")
    p.add_argument("--seed-secret", default=None, metavar="HEX",
                   help="the secret hidden test inputs are derived from (autograder/seeds.py), written into "
                        "the Gradescope zip; at least 32 hex digits (default: a fresh random one per build, "
                        "so each build's zip differs; pin it to rebuild byte-identical zips or keep "
                        "regrades identical across builds)")
    p.add_argument("--verify", choices=["docker"], default=None,
                   help="then build dist/autograder.zip's image in a Docker replica of Gradescope and grade "
                        "the solutions, the stubs, a mutant and hostile submissions in fresh containers "
                        "(default privileges and SYS_ADMIN); exit 1 on any surprise")
    from autograder.packaging.verify.replica_runs import add_arguments as replica_arguments
    replica_arguments(p)


def main(args: argparse.Namespace) -> int:
    from autograder import repo_root
    from autograder.packaging.release import ReleaseError
    from autograder.packaging.verify.simulate import self_grade
    from autograder.packaging.zips import BuildError

    root = repo_root()
    try:
        ctx = BuildContext(root=root, out=Path(args.out).resolve(),
                           exercises=contract.select(args.exercises), points=parse_points(args.points),
                           torch_index=args.torch_index or "", torch_find_links=args.torch_find_links or "",
                           seed_secret=args.seed_secret or "")
        build(ctx, [s.strip() for s in args.only.split(",")] if args.only else None)
    except (BuildError, ReleaseError, ValueError) as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 2
    if (args.self_grade or args.verify) and "gradescope" not in ctx.artifacts:
        print("build: --self-grade and --verify need the gradescope export", file=sys.stderr)
        return 2
    status = self_grade(root, ctx.artifacts["gradescope"][0], args.python) if args.self_grade else 0
    if args.verify == "docker":
        from autograder.packaging.verify.replica_runs import verify
        status = max(status, verify(ctx.artifacts["gradescope"][0], args))
    return status
