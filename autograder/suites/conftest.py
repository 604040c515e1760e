"""Shared by every hidden suite: an exception from the student's code gets a "Likely cause"
line when its type, its message and the student's own lines point to a well-known mistake
(``autograder.diagnosis.errors``).

The exception keeps its type and its message (what the engine shows); the cause is added on
a line of its own, as ``checks`` does for a value that matches a known wrong implementation.
The student's file is made known to ``checks`` for the test's duration (``checks.student_sources``)
so that a cause can be read from the function that made the mistake, not only the line that raised.
"""
from __future__ import annotations

import pytest
import torch

from autograder.diagnosis.causes import text as cause_text
from autograder.diagnosis.errors import cause_of_error
from autograder.sandbox import StudentError
from autograder.sandbox.protocol import ErrorKind
from autograder.suites import checks
from autograder.suites.checks import CAUSE

_NO_CAUSE_KINDS = (ErrorKind.NOT_IMPLEMENTED, ErrorKind.UNENCODABLE, ErrorKind.TIMEOUT, ErrorKind.DIED)
_THREADS_KEY = pytest.StashKey[int]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """The grader's own torch work (references on tiny tensors, ex5's and ex6's small
    trainings) runs on one thread, as the workers do (``forkserver._single_threaded_maths``):
    on a busy machine (two graders, a batch, the kit's own tests) OpenMP threads spinning for
    cores that the workers hold made ex6's training test three to four times slower. The
    caller's setting comes back at the end (``check`` may run in a student's notebook)."""
    session.stash[_THREADS_KEY] = torch.get_num_threads()
    torch.set_num_threads(1)


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.stash.get(_THREADS_KEY, None)
    if before is not None:
        torch.set_num_threads(before)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """Fixtures that call the student's code (ex2 draws each plot once, in a fixture)."""
    checks.student_sources = _sources(item)
    try:
        return (yield)
    except StudentError as exc:
        _add_cause(exc)
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except StudentError as exc:
        _add_cause(exc)
        raise


def pytest_runtest_teardown(item: pytest.Item) -> None:
    checks.student_sources = {}


def _sources(item: pytest.Item) -> dict[str, str]:
    """{file name: text} of the student's file for the test's exercise (empty when unknown)."""
    from autograder import contract
    from autograder.plugin import GradingPlugin, exercise_of

    plugin = next((p for p in item.config.pluginmanager.get_plugins() if isinstance(p, GradingPlugin)), None)
    exercise = contract.BY_ID.get(exercise_of(item))
    source = plugin.student_source(exercise.id) if plugin is not None and exercise is not None else None
    return {exercise.filename: source} if source else {}


def _add_cause(exc: StudentError) -> None:
    error = exc.error
    if error is None or error.kind in _NO_CAUSE_KINDS or CAUSE in str(exc) or len(exc.args) != 1:
        return
    cause = cause_of_error(error.type, error.message, [[f.filename, f.line, f.function, f.source] for f in error.where],
                           checks.student_sources)
    if cause:
        exc.args = (f"{exc.args[0]}\n{CAUSE}{cause_text(cause)}",)
        exc.cause = cause
