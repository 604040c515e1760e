"""Grade one submission: intake -> sandbox -> hidden suites -> results.json.

``grade`` is the single code path behind ``python -m autograder grade`` and Gradescope's
``run_autograder``. Order matters: the zero-score results file is written first, the fork
server (one per process, :func:`autograder.sandbox.forkserver.shared`) is started before any
suite or reference module is imported, and the final file is written once, atomically.
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder import contract, intake, results
from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig
from autograder.sandbox import forkserver as zygote
from autograder.sandbox.limits import isolation_summary

PACKAGE_DIR = Path(__file__).resolve().parent
SUITES_DIR = PACKAGE_DIR / "suites"


@dataclass
class GradeRequest:
    submission: Path
    results_path: Path | None = None
    exercises: tuple[contract.Exercise, ...] = contract.EXERCISES
    config: SandboxConfig = field(default_factory=SandboxConfig)
    in_process: bool = False          # benchmarks only: student code in this process
    public_only: bool = False         # `check`: the public tests alone


def kit_folders() -> list[str]:
    """Folders the worker must not see: the kit, the reference, and a checkout's other trees."""
    folders = {str(PACKAGE_DIR)}
    try:                  # absent from the student release (`check`): nothing to hide then
        import reference  # noqa: PLC0415 - only its location; importing the package runs nothing
        folders.add(str(Path(reference.__file__).resolve().parent))
    except ImportError:
        pass
    root = PACKAGE_DIR.parent
    for name in ("solutions", "tests", "reference", "assignments", "dist", ".git"):
        if (root / name).exists():
            folders.add(str(root / name))
    return sorted(folders)


def _is_shared_folder(path: str) -> bool:
    """Folders too broad to cover (the worker's own home lives in the temp folder)."""
    tmp = Path(tempfile.gettempdir()).resolve()
    p = Path(path)
    return p == tmp or p in tmp.parents or str(p) in ("/", "/home", "/var", "/root")


def grade(request: GradeRequest) -> results.Results:
    started = time.monotonic()
    if request.results_path:
        results.write_atomic(request.results_path, results.placeholder(
            "Grading started but did not finish. If this message stays, the autograder itself "
            "failed before it could write your results: please tell the course staff."))
    submission = intake.collect(request.submission, request.exercises)
    config = request.config
    hidden = set(config.hide) | set(kit_folders()) | {str(Path(request.submission).resolve())}
    if request.results_path:
        hidden.add(str(Path(request.results_path).resolve().parent))
    config.hide = sorted(h for h in hidden if not _is_shared_folder(h))
    preload(request.exercises)
    from autograder.sandbox import spawn    # no zygote where workers are spawned (Windows, macOS)
    forkserver = None if request.in_process or spawn.chosen(config) else zygote.shared()
    sandbox = Sandbox([ModuleSource(f.exercise.module, f.exercise.filename, f.source)
                       for f in submission.found.values() if f.source is not None],
                      config, forkserver, in_process=request.in_process)
    for found in submission.found.values():
        if found.source is None:
            sandbox.load_errors[found.exercise.module] = {"kind": "missing", "message": found.problem}
    try:
        sandbox.start()
        outcome = run_suites(sandbox, submission, request)
    finally:
        sandbox.close()
    outcome.execution_time = time.monotonic() - started
    outcome.output = summary(outcome, submission, sandbox, config)
    if request.results_path:
        results.write_atomic(request.results_path, outcome.to_json())
    return outcome


def preload(exercises: tuple[contract.Exercise, ...]) -> None:
    """Import what the exercises' code will need before the worker is forked (shared pages)."""
    for name in sorted({m for ex in exercises for m in ex.preload}):
        importlib.import_module(name)


def run_suites(sandbox: Sandbox, submission: intake.Submission, request: GradeRequest) -> results.Results:
    import pytest

    from autograder.plugin import GradingPlugin

    plugin = GradingPlugin(sandbox, submission)
    only_public = ["-m", "public"] if request.public_only else []
    code = run_pytest(pytest_args(request.exercises, *only_public), plugin)
    if plugin.internal_errors:
        print("\n\n".join(plugin.internal_errors), file=sys.stderr)
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR) or not plugin.order:
        raise RuntimeError(f"the hidden test suites could not run (pytest exit code {int(code)})")
    return results.Results(tests=scale_to_totals(plugin.ordered_results()))


def pytest_args(exercises: tuple[contract.Exercise, ...], *extra: str) -> list[str]:
    """How the hidden suites always run: their own folder, ini and rootdir, only the kit's
    plugin (no cache, no terminal report, no random order), plain asserts (a failure shows
    its message, never test source)."""
    folders = [str(SUITES_DIR / ex.folder) for ex in exercises if (SUITES_DIR / ex.folder).is_dir()]
    return [*folders, "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:randomly",
            "--assert=plain", "--rootdir", str(SUITES_DIR), "--confcutdir", str(SUITES_DIR),
            "-c", str(SUITES_DIR / "pytest.ini"), "--import-mode=importlib", *extra]


def run_pytest(args: list[str], plugin: object) -> int:
    """``pytest.main`` with the caller's PYTEST_ADDOPTS / PYTEST_PLUGINS set aside meanwhile."""
    import pytest

    saved = {v: os.environ.pop(v) for v in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS") if v in os.environ}
    try:
        return int(pytest.main(args, plugins=[plugin]))
    finally:
        os.environ.update(saved)


def scale_to_totals(tests: list[results.TestResult]) -> list[results.TestResult]:
    """Tests' `points` markers are weights; each exercise adds up to its configured total."""
    weights: dict[str, float] = {}
    for t in tests:
        weights[t.exercise] = weights.get(t.exercise, 0.0) + t.max_score
    for t in tests:
        total = contract.BY_ID[t.exercise].points if t.exercise in contract.BY_ID else weights[t.exercise]
        factor = total / weights[t.exercise] if weights[t.exercise] else 0.0
        t.max_score = round(t.max_score * factor, 4)
        t.score = t.max_score if t.passed else 0.0
    return tests


def summary(outcome: results.Results, submission: intake.Submission, sandbox: Sandbox,
            config: SandboxConfig) -> str:
    lines = [f"Total: {outcome.score:g} / {outcome.max_score:g}", ""]
    per_exercise = outcome.by_exercise()
    for ex_id, found in submission.found.items():
        score, max_score = per_exercise.get(ex_id, (0.0, 0.0))
        line = f"{ex_id} {found.exercise.title}: {score:g} / {max_score:g}"
        error = sandbox.load_errors.get(found.exercise.module)
        if error is not None:
            from autograder.sandbox.errors import describe_load_error
            line += "\n    " + describe_load_error(found.exercise.module, error).replace("\n", "\n    ")
        for note in found.notes:
            line += f"\n    note: {note}"
        lines.append(line)
    if not config.privileged:
        lines += ["", "Isolation: " + isolation_summary(config)]
    return "\n".join(lines)
