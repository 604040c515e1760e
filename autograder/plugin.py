"""The pytest plugin that connects hidden suites to a sandboxed submission.

Tests declare what they need (``student``, ``support``, ``submission``); the plugin
provides it and turns each outcome into a ``TestResult``. Failure text comes only from the
exception's message (suites run with ``--assert=plain``), never from test source.
"""
from __future__ import annotations

import gc
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

import pytest

from autograder import seeds, suite_fixtures
from autograder.budget import Budgeted, Budgets
from autograder.contract import EXERCISES
from autograder.diagnosis import causes
from autograder.intake import Submission
from autograder.records import NOTE_PREFIX, TestRecord
from autograder.results import TestResult
from autograder.sandbox import Sandbox, SandboxUnavailable, StudentError, StudentModules, WorkerCrashed, support_root
from autograder.sandbox.protocol import ErrorKind

_FOLDER_TO_ID = {ex.folder: ex.id for ex in EXERCISES}
_ID_TO_MODULE = {ex.id: ex.module for ex in EXERCISES}


class GradingPlugin:
    """``budgets``: per-exercise time budgets (default: :data:`autograder.budget.DEFAULT_BUDGET_S`
    each); ``on_exercise_done(exercise_id)`` is called as soon as an exercise's last test ends."""

    def __init__(self, sandbox: Sandbox, submission: Submission, budgets: Budgets | None = None,
                 on_exercise_done: Callable[[str], None] | None = None):
        self._sandbox = sandbox
        self._submission = submission
        self.budgets = budgets or Budgets()
        self._guarded = Budgeted(sandbox, self.budgets, sandbox.config.call_timeout) if sandbox is not None else None
        self._on_exercise_done = on_exercise_done
        self.records: dict[str, TestRecord] = {}     # node id -> the test as collected
        self.results: dict[str, TestResult] = {}
        self.order: list[str] = []
        self.internal_errors: list[str] = []
        self.crashes: dict[str, int] = {}        # exercise -> worker deaths during its tests
        self.seconds: dict[str, float] = {}      # exercise -> wall time of its tests
        self.done: list[str] = []                # exercises whose tests have all run
        self._seeds: dict[bool, seeds.Seeds] = {}   # hidden?: the run's seeds (autograder.seeds)

    @classmethod
    def collector(cls) -> "GradingPlugin":
        """A plugin for ``--collect-only`` runs (titles, weights, visibility; no fixtures)."""
        return cls(None, None)          # type: ignore[arg-type] - nothing is run

    # ---------------------------------------------------------------- fixtures
    # (the fixtures themselves: autograder.suite_fixtures, registered here)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[suite_fixtures.PLUGIN] = self
        if not config.pluginmanager.is_registered(suite_fixtures):
            config.pluginmanager.register(suite_fixtures, "autograder-suite-fixtures")

    def student(self) -> StudentModules:
        return StudentModules(self._guarded, [f.exercise.module for f in self._submission.found.values()])

    def support(self):
        return support_root(self._guarded)

    @property
    def submission(self) -> Submission:
        return self._submission

    # ---------------------------------------------------------------- collection
    @pytest.hookimpl(trylast=True)      # after `-m public` (check) has deselected the hidden tests
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        counters: dict[str, int] = {}
        for item in items:
            record = record_of(item)
            counters[record.exercise] = counters.get(record.exercise, 0) + 1
            self.records[item.nodeid] = record
            self.results[item.nodeid] = TestResult(
                exercise=record.exercise, title=record.title, max_score=record.weight,
                visibility="visible" if record.public else "after_published",
                number=f"{record.exercise.removeprefix('ex')}.{counters[record.exercise]}")
            self.order.append(item.nodeid)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.internal_errors.append(f"could not collect {report.nodeid}:\n{report.longreprtext}")

    # ---------------------------------------------------------------- set-up
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Each exercise's tests run in a worker of their own (forked workers: one that never
        imported another exercise's file), entered before the exercise's clock starts: the
        import of its file is bounded by the load timeout, not charged to its budget. The
        clock runs from its first test; once its budget is spent its remaining tests fail
        here, before any fixture calls into the worker. Every test starts from the same random
        state in the worker, whatever ran before it (or crashed and restarted the worker):
        same submission, same scores. Hidden inputs and that state are derived from the
        build's secret, the exercise's source and the test (:mod:`autograder.seeds`).

        An exercise whose file is unusable (missing, refused, or its import failed) fails each
        test here with that reason, as its first call into the student's module would: none of
        its fixtures or reference computations run for nothing."""
        exercise = exercise_of(item)
        module = _ID_TO_MODULE.get(exercise)
        if module is not None and exercise != self.budgets.current:
            self._sandbox.enter(module)
        self.budgets.enter(exercise)
        self.budgets.check()
        unusable = self._sandbox.unavailable(module) if module is not None else None
        if unusable is not None:
            raise unusable
        run_seeds = self.seeds_for(hidden=item.get_closest_marker("public") is None)
        seeds.enter(run_seeds, exercise, item.nodeid)
        self._sandbox.reseed(seeds.worker_seed(run_seeds, exercise, item.nodeid))

    def seeds_for(self, hidden: bool) -> seeds.Seeds:
        """This run's seeds; public tests (literal seeds, reproduced by students) never need
        the secret, so ``check`` neither reads nor creates one."""
        if hidden not in self._seeds:
            secret, origin = seeds.load_secret() if hidden else (seeds.FALLBACK_SECRET, "public")
            if origin == "fallback":
                print(f"warning: no hidden-input secret could be read or created ({seeds.SECRET_FILE}): "
                      "hidden inputs use the public fallback secret", file=sys.stderr)
            self._seeds[hidden] = seeds.for_submission(self._submission, secret)
        return self._seeds[hidden]

    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        seeds.leave()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        exercise = exercise_of(item)
        started = time.monotonic()
        yield
        elapsed = time.monotonic() - started
        self.seconds[exercise] = self.seconds.get(exercise, 0.0) + elapsed
        if item.nodeid in self.results:
            self.results[item.nodeid].seconds = elapsed
        if nextitem is None or exercise_of(nextitem) != exercise:
            self.done.append(exercise)
            _release_memory()
            if self._on_exercise_done is not None:
                self._on_exercise_done(exercise)

    # ---------------------------------------------------------------- outcomes
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        # A failure's result is made from its exception (failure_text), never from pytest's
        # report of it, whose "long" traceback parses the whole source file of every frame
        # (ast) for every failed test: 2 s of a stub's grading. Style "no" skips making it.
        option = item.config.option
        style = getattr(option, "tbstyle", "auto")
        option.tbstyle = "no"
        try:
            outcome = yield
        finally:
            option.tbstyle = style
        report = outcome.get_result()
        result = self.results.get(item.nodeid)
        if result is None or report.skipped:
            return
        if report.when == "call" and report.passed:
            result.passed, result.score, result.output = True, result.max_score, ""
        elif report.failed:
            result.passed, result.score = False, 0.0
            result.output = self.failure_text(item, call.excinfo)
            exc = call.excinfo.value if call.excinfo else None
            result.cause = tuple(causes.ids(getattr(exc, "cause", None)))   # GradingFailure, StudentError
            if isinstance(exc, WorkerCrashed) and exc.kind is ErrorKind.DIED:
                self.crashes[result.exercise] = self.crashes.get(result.exercise, 0) + 1

    def failure_text(self, item: pytest.Item, excinfo) -> str:
        exc = excinfo.value if excinfo else None
        if isinstance(exc, StudentError):
            return exc.student_message
        if isinstance(exc, AssertionError):
            return str(exc) or "a check failed"
        if isinstance(exc, SandboxUnavailable):       # the machine's problem, said once to staff
            said = f"the sandbox could not start: {exc.reason}"
            if said not in self.internal_errors:
                self.internal_errors.append(said)
            return exc.student_message
        self.internal_errors.append(f"{item.nodeid}: " + "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__)) if exc else item.nodeid)
        # Most often the test tripped over a value of an unexpected kind (a single array where
        # a pair was due, a list for a tensor). The exception's type says enough; its message
        # and the test's code stay in the log for course staff.
        return ("the grader could not finish this test "
                f"({type(exc).__name__ if exc else 'unknown error'} in the test while it used what "
                "your code returned). Check return types and shapes against the docstring; if they "
                "match, tell course staff: the details are in the autograder log")

    def student_source(self, exercise_id: str) -> str | None:
        """The text of the student's file for ``exercise_id`` as graded (None when there is
        none): the suites read the student's own lines to name the mistake behind an error."""
        found = self._submission.found.get(exercise_id) if self._submission is not None else None
        return getattr(found, "source", None)

    def ordered_results(self) -> list[TestResult]:
        return [self.results[n] for n in self.order]

    def ordered_records(self) -> list[TestRecord]:
        return [self.records[n] for n in self.order]


def record_of(item: pytest.Item) -> TestRecord:
    """The one place a test's markers are read: ``points`` (its weight; 0 for a ``note``),
    ``public``, ``title`` (or the docstring's first line), every ``covers`` and ``contract``
    marker (class, module and function levels together), ``note``."""
    points = item.get_closest_marker("points")
    note = item.get_closest_marker("note")
    title = title_of(item)
    return TestRecord(
        exercise=exercise_of(item), nodeid=item.nodeid,
        title=NOTE_PREFIX + title if note else title,
        weight=0.0 if note else (float(points.args[0]) if points else 1.0),
        public=item.get_closest_marker("public") is not None,
        covers=tuple(dict.fromkeys(str(a) for m in item.iter_markers("covers") for a in m.args)),
        contract=tuple(dict.fromkeys(str(a) for m in item.iter_markers("contract") for a in m.args)),
        note=str(note.args[0]) if note and note.args else "")


def _release_memory() -> None:
    """After an exercise: what its tests left (inputs, reference models, diagnosis variants)
    collected, and the heap's free pages given back, before the next exercise's peak."""
    gc.collect()
    from autograder.sandbox.lifetime import release_free_memory
    release_free_memory()


def exercise_of(item: pytest.Item) -> str:
    for part in Path(str(item.path)).parts[::-1]:
        if part in _FOLDER_TO_ID:
            return _FOLDER_TO_ID[part]
    return "ex?"


def title_of(item: pytest.Item) -> str:
    marker = item.get_closest_marker("title")
    if marker:
        return str(marker.args[0])
    doc = (getattr(item, "obj", None).__doc__ or "").strip() if getattr(item, "obj", None) else ""
    base = doc.splitlines()[0].rstrip(".") if doc else item.originalname.removeprefix("test_").replace("_", " ")
    params = getattr(item, "callspec", None)
    return f"{base} [{params.id}]" if params else base
