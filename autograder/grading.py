"""Grade one submission: intake -> sandbox -> hidden suites -> results.json.

``grade`` is the single code path behind ``python -m autograder grade``, Gradescope's
``run_autograder`` and ``check``. Order matters: the zero-score results file is written
first; pytest and the kit's plugin are imported when this module is (before any student code
runs, so nothing a submission plants can stand in for them); the fork server (one per process,
:func:`autograder.sandbox.forkserver.shared`) is started before any suite or reference module
is imported (by ``python -m autograder grade``, before pytest and this module too:
:func:`autograder.sandbox.startup.start_zygote_early`); the results file is rewritten,
atomically, as each exercise finishes, so a later crash or timeout keeps the earlier
exercises' scores.

What became of each exercise is data: ``Results.exercises`` (one
:class:`~autograder.results.ExerciseOutcome` each), written into results.json ``extra_data``
and read by every front end (``grade``'s summary, ``check``, ``batch``, the interop adapter).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest                                    # before any student code runs (see above)

import autograder
from autograder import budget, contract, feedback, intake, results
from autograder.plugin import GradingPlugin
from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, backends, startup
from autograder.sandbox.errors import describe_load_error, describe_notebook_cell_error
from autograder.sandbox.protocol import ErrorKind, WorkerError
from autograder.records import TestRecord

PACKAGE_DIR = autograder.PACKAGE_DIR
SUITES_DIR = PACKAGE_DIR / "suites"


@dataclass
class GradeRequest:
    submission: Path
    results_path: Path | None = None
    exercises: tuple[contract.Exercise, ...] = contract.DEFAULT
    config: SandboxConfig = field(default_factory=SandboxConfig)
    in_process: bool = False          # benchmarks only: student code in this process
    public_only: bool = False         # `check`: the public tests alone
    suites_dir: Path | None = None    # another copy of the suites (tests; default: the kit's)
    budgets: dict[str, float] = field(default_factory=dict)    # exercise id -> seconds
    default_budget: float = budget.DEFAULT_BUDGET_S           # for exercises not in `budgets`
    # intake's result when the caller already has it (`check` looks before it grades): intake
    # then runs once; it must come from `submission` and `exercises` above
    collected: intake.Submission | None = None
    # more arguments for the suites' pytest (the kit's own tests: a plugin that runs some tests only)
    pytest_extra: tuple[str, ...] = ()


def kit_folders() -> list[str]:
    """Folders the worker must not see: the kit, the reference, and a checkout's other trees."""
    folders = {str(PACKAGE_DIR)}
    try:                  # absent from the student release (`check`): nothing to hide then
        import reference  # noqa: PLC0415 - only its location; importing the package runs nothing
        folders.add(str(Path(reference.__file__).resolve().parent))
    except ImportError:
        pass
    root = autograder.repo_root()
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
    """Grade one submission; ``Results.exercises`` says what became of each exercise."""
    started = time.monotonic()
    if request.results_path:
        results.write_atomic(request.results_path, results.placeholder())
    submission = request.collected or intake.collect(request.submission, request.exercises)
    sandbox = open_sandbox(submission, _worker_config(request), request.exercises, in_process=request.in_process)
    budgets = budget.Budgets(dict(request.budgets), request.default_budget)

    def assemble(tests: list[results.TestResult], outcomes: list[results.ExerciseOutcome],
                 complete: bool) -> results.Results:
        level = sandbox.level
        outcome = results.Results(tests=tests, isolation=level, complete=complete,
                                  isolation_description=sandbox.backend.level.description,
                                  reach_ins=reach_ins(sandbox), exercises=outcomes)
        outcome.execution_time = time.monotonic() - started
        outcome.output = feedback.summary(outcome, submission)
        return outcome

    def checkpoint(plugin: GradingPlugin) -> None:
        if request.results_path:
            done = set(plugin.done)
            tests = scale_to_totals([dataclasses.replace(t) for t in plugin.ordered_results()
                                     if t.exercise in done], request.exercises)
            outcomes = decide_outcomes(submission, sandbox, tests, plugin, budgets, done=done)
            results.write_atomic(request.results_path, assemble(tests, outcomes, False).to_json())

    ran = run(sandbox, submission, request.exercises, budgets, request.public_only,
              request.suites_dir, checkpoint, request.pytest_extra)
    outcome = assemble(ran.tests, ran.outcomes, True)
    report_reach_ins(outcome.reach_ins)
    if request.results_path:
        results.write_atomic(request.results_path, outcome.to_json())
    return outcome


def _worker_config(request: GradeRequest) -> SandboxConfig:
    """The request's sandbox configuration plus the folders the worker must not see (a copy:
    the request is left as it was)."""
    config = request.config
    hidden = set(config.hide) | set(kit_folders()) | {str(Path(request.submission).resolve())}
    if request.results_path:
        hidden.add(str(Path(request.results_path).resolve().parent))
    if request.suites_dir:
        hidden.add(str(Path(request.suites_dir).resolve()))
    return dataclasses.replace(config, hide=sorted(h for h in hidden if not _is_shared_folder(h)))


def open_sandbox(submission: intake.Submission, config: SandboxConfig,
                 exercises: tuple[contract.Exercise, ...] = (), in_process: bool = False) -> Sandbox:
    """A sandbox holding the submission's usable sources, its worker backend chosen now (the
    zygote starts loading what the student calls of the first of ``exercises`` that has a
    source need while the grader goes on, each other's before its worker: ``ForkedBackend``);
    exercises without a source (missing, refused) are recorded as unavailable, so their tests
    fail with intake's message and nothing is warmed for them."""
    usable = {f.exercise.id: f for f in submission.found.values() if f.source is not None}
    needs = {ex.module: backends.parts_for(ex.warm_up, usable[ex.id].imports)   # in the order they run
             for ex in exercises if ex.id in usable}
    backend = startup.choose(config, in_process=in_process, needs=needs)
    sandbox = Sandbox([ModuleSource(f.exercise.module, f.exercise.filename, f.source, cells=f.cells)
                       for f in usable.values()],
                      config, backend)
    for found in submission.found.values():
        if found.source is None:
            # "missing" for refused files too: the message (intake's) says which it is
            sandbox.mark_missing(found.exercise.module, found.problem)
    return sandbox


@dataclass
class Run:
    """What one engine run produced: the tests (scaled to exact totals), the plugin that ran
    them (clocks, crashes, which exercises are done) and one outcome per exercise."""
    tests: list[results.TestResult]
    plugin: GradingPlugin
    outcomes: list[results.ExerciseOutcome]


def run(sandbox: Sandbox, submission: intake.Submission, exercises: tuple[contract.Exercise, ...],
        budgets: budget.Budgets, public_only: bool = False, suites_dir: Path | None = None,
        on_exercise_done: Callable[[GradingPlugin], None] | None = None,
        pytest_extra: tuple[str, ...] = ()) -> Run:
    """THE engine call, shared by ``grade``, ``check`` and the interop adapter: start the
    sandbox, run the hidden (or only the public) suites of ``exercises`` on ``submission``
    through :class:`GradingPlugin`, close the sandbox, and say what became of each exercise.

    Raises ``KeyboardInterrupt`` when pytest swallowed a SIGINT, ``RuntimeError`` when the
    suites could not run at all (collection or usage error, nothing collected)."""
    plugin = GradingPlugin(sandbox, submission, budgets,
                           (lambda _ex: on_exercise_done(plugin)) if on_exercise_done else None)
    only_public = ("-m", "public") if public_only else ()
    try:
        sandbox.start()
        code = run_pytest(pytest_args(exercises, *only_public, *pytest_extra, suites_dir=suites_dir), plugin)
    finally:
        sandbox.close()
    if plugin.internal_errors:
        print("\n\n".join(plugin.internal_errors), file=sys.stderr)
    if code == pytest.ExitCode.INTERRUPTED:      # pytest swallowed a SIGINT: stop here, the file
        raise KeyboardInterrupt                  # written after the last finished exercise stays
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR) or not plugin.order:
        raise RuntimeError(f"the hidden test suites could not run (pytest exit code {int(code)})")
    tests = scale_to_totals(plugin.ordered_results(), exercises)
    return Run(tests, plugin, decide_outcomes(submission, sandbox, tests, plugin, budgets))


def collect(exercises: tuple[contract.Exercise, ...], pytest_extra: tuple[str, ...] = (),
            suites_dir: Path | None = None) -> list[TestRecord]:
    """THE collection of the suites, read by every caller that needs to know what the tests are
    (``check``'s worth, the coverage matrix, the exports, the kit's tests): one
    :class:`~autograder.records.TestRecord` per test, in suite order, made by the same plugin
    that grades, with ``points`` its weight scaled to the exercise's total. Collection only."""
    plugin = GradingPlugin.collector()
    code = run_pytest(pytest_args(exercises, *pytest_extra, "--collect-only", suites_dir=suites_dir), plugin)
    if plugin.internal_errors or code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise RuntimeError(f"collecting the suites failed (pytest exit code {int(code)}):\n"
                           + "\n".join(plugin.internal_errors))
    scaled = scale_to_totals(plugin.ordered_results(), exercises)
    return [dataclasses.replace(record, points=result.max_score)
            for record, result in zip(plugin.ordered_records(), scaled)]


def pytest_args(exercises: tuple[contract.Exercise, ...], *extra: str,
                suites_dir: Path | None = None) -> list[str]:
    """How the hidden suites always run: their own folder, ini and rootdir, only the kit's
    plugin (no cache, no terminal report, no random order; no unraisable-exception hunt,
    whose forced garbage collections cost a third of a small exercise's time; no log capture,
    which attaches a handler to every one of torch's non-propagating loggers three times per
    test), plain asserts (a failure shows its message, never test source)."""
    root = Path(suites_dir) if suites_dir else SUITES_DIR
    folders = [str(root / ex.folder) for ex in exercises if (root / ex.folder).is_dir()]
    ini = root / "pytest.ini" if (root / "pytest.ini").is_file() else SUITES_DIR / "pytest.ini"
    return [*folders, "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:randomly",
            "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:faulthandler",
            "-p", "no:logging",
            "--assert=plain", "--rootdir", str(root), "--confcutdir", str(root),
            "-c", str(ini), "--import-mode=importlib", *extra]


def run_pytest(args: list[str], plugin: object) -> int:
    """``pytest.main`` with only the kit's plugin: the caller's PYTEST_ADDOPTS / PYTEST_PLUGINS
    set aside and no plugin of the environment loaded (entry points) meanwhile."""
    saved = {v: os.environ.pop(v) for v in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", AUTOLOAD) if v in os.environ}
    os.environ[AUTOLOAD] = "1"
    try:
        return int(pytest.main(args, plugins=[plugin]))
    finally:
        os.environ.pop(AUTOLOAD, None)
        os.environ.update(saved)


AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def scale_to_totals(tests: list[results.TestResult],
                    exercises: tuple[contract.Exercise, ...] | None = None) -> list[results.TestResult]:
    """Tests' `points` markers are weights; each exercise's tests get ``max_score`` values that
    add up EXACTLY to its configured total (largest remainder at 4 decimals,
    :func:`autograder.results.split_total`), whatever the weights; a passed test scores its
    ``max_score``. ``exercises`` gives the totals (default: the contract's)."""
    totals = {ex.id: ex.points for ex in (exercises or ())}
    groups: dict[str, list[results.TestResult]] = {}
    for t in tests:
        groups.setdefault(t.exercise, []).append(t)
    for ex_id, group in groups.items():
        weights = [t.max_score for t in group]
        total = totals.get(ex_id, contract.BY_ID[ex_id].points if ex_id in contract.BY_ID else sum(weights))
        for t, share in zip(group, results.split_total(total, weights)):
            t.max_score = share
            t.score = share if t.passed else 0.0
    return tests


# --------------------------------------------------------------------------- outcomes

def decide_outcomes(submission: intake.Submission, sandbox: Sandbox, tests: list[results.TestResult],
                      plugin: GradingPlugin | None, budgets: budget.Budgets,
                      done: set[str] | None = None) -> list[results.ExerciseOutcome]:
    """One :class:`~autograder.results.ExerciseOutcome` per exercise of the submission
    (``done``: only these, for a results file written while grading goes on)."""
    out = []
    for ex_id, found in submission.found.items():
        if done is not None and ex_id not in done:
            continue
        mine = [t for t in tests if t.exercise == ex_id]
        module = found.exercise.module
        status, message = _status(found, sandbox.start_error(module), sandbox.load_error(module), plugin, budgets)
        cell_error = sandbox.load_notes.get(module)          # a notebook cell raised; the others ran
        if cell_error is not None and status is results.ExerciseStatus.GRADED:
            message = results.one_line(describe_notebook_cell_error(found.origin or found.exercise.filename,
                                                                    cell_error), 2000)
        out.append(results.ExerciseOutcome(
            exercise=ex_id, status=status, message=message,
            score=round(sum(t.score for t in mine), results.SCORE_DECIMALS),
            max_score=round(sum(t.max_score for t in mine), results.SCORE_DECIMALS),
            seconds=plugin.seconds.get(ex_id, 0.0) if plugin else 0.0,
            tests_total=len(mine), tests_passed=sum(t.passed for t in mine),
            origin=found.origin if found.source is not None else ""))
    return out


CRASHES_FOR_CRASHED = 3          # worker deaths in one exercise's tests that make it "crashed"


def _status(found: intake.Found, start_error: str | None, load_error: WorkerError | None,
            plugin: GradingPlugin | None, budgets: budget.Budgets) -> tuple[results.ExerciseStatus, str]:
    """The exercise's status, first match wins: refused, missing, not run (``start_error``: no
    sandbox could start for it, the machine's problem), syntax/import error or crash at import
    (``load_error``), out of time, crashed in its tests, graded."""
    Status = results.ExerciseStatus
    ex = found.exercise
    if found.kind == "refused":       # intake's messages are one line; file names in them stay in it
        return Status.REFUSED, results.one_line(found.problem or f"{ex.filename} was refused", 2000)
    if found.source is None:
        return Status.MISSING, results.one_line(
            found.problem or f"{ex.filename} was not found in the submission", 2000)
    if start_error is not None:
        return Status.NOT_RUN, results.one_line(
            f"not graded: the autograder could not start the sandbox for this exercise ({start_error}); "
            "tell course staff", 2000)
    if load_error is not None:
        notebook = found.origin.endswith(".ipynb")
        in_cell = intake.notebooks.cell_line(found.source, found.cells, load_error.line) if notebook else None
        message = describe_load_error(ex.module, load_error, notebook=notebook, in_cell=in_cell)
        if load_error.is_syntax_error:
            return Status.SYNTAX_ERROR, message
        if load_error.kind is ErrorKind.DIED:
            return Status.CRASHED, message
        return Status.IMPORT_ERROR, message
    if budgets.out_of_time(ex.id):
        return Status.OUT_OF_TIME, (f"the time budget for {ex.id} ({budgets.budget(ex.id):g} s) was used "
                                    "up; the tests that had not finished by then scored 0")
    crashes = plugin.crashes.get(ex.id, 0) if plugin else 0
    if crashes >= CRASHES_FOR_CRASHED:
        return Status.CRASHED, f"your code's worker process died in {crashes} tests of {ex.id}"
    return Status.GRADED, ""


# --------------------------------------------------------------------------- isolation

def reach_ins(sandbox: Sandbox) -> dict[str, list[list]]:
    """Reach-ins into the kit noticed in the workers (``sandbox/reachin.py``), by exercise id:
    ``[event, file, line]`` each."""
    return {contract.BY_MODULE[module].id: [[r.event, r.filename, r.line] for r in records]
            for module, records in sorted(sandbox.reach_ins.items())
            if module in contract.BY_MODULE and records}


def report_reach_ins(found: dict[str, list[list]]) -> None:
    """Tell course staff (the log; Gradescope shows it to instructors only)."""
    for exercise, records in found.items():
        for event, filename, line in records:
            print(f"reach-in: {exercise}: {results.one_line(filename, 120)} line {line} called {event} "
                  "(a student file reaching into the grader's worker; reported, not scored)",
                  file=sys.stderr, flush=True)
