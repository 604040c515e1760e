"""Shared by every hidden suite: an exception from the student's code gets a "Likely cause"
line when its type and message point to a well-known mistake (``autograder.diagnosis.errors``).

The exception keeps its type and its message (what the engine shows); the cause is added on
a line of its own, as ``checks`` does for a value that matches a known wrong implementation.
"""
from __future__ import annotations

import pytest

from autograder.diagnosis.errors import cause_of_error
from autograder.sandbox import StudentError
from autograder.sandbox.protocol import ErrorKind
from autograder.suites.checks import CAUSE

_NO_CAUSE_KINDS = (ErrorKind.NOT_IMPLEMENTED, ErrorKind.UNENCODABLE, ErrorKind.TIMEOUT, ErrorKind.DIED)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """Fixtures that call the student's code (ex2 draws each plot once, in a fixture)."""
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


def _add_cause(exc: StudentError) -> None:
    error = exc.error
    if error is None or error.kind in _NO_CAUSE_KINDS or CAUSE in str(exc) or len(exc.args) != 1:
        return
    cause = cause_of_error(error.type, error.message, [[f.filename, f.line, f.function, f.source] for f in error.where])
    if cause:
        exc.args = (f"{exc.args[0]}\n{CAUSE}{cause}",)
        exc.cause = cause
