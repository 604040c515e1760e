"""A pytest plugin for the kit's own tests: the engine runs only the tests whose name holds a word.

    grade_folder(folder, "ex1", only=("softmax",))       # helpers.grade_folder

The words go to the suites' pytest run (``GradeRequest.pytest_extra``) as ``--only-title``;
a test's name is its exercise and title as results show them (``ex1 · softmax: …``), the
names a mutant's ``expect-fail`` words are matched against. Hidden inputs are derived from
each test's own id (``autograder.seeds``), so a test run alone draws what it draws in a full
grading.
"""
from __future__ import annotations

import pytest

from autograder.plugin import record_of

OPTION = "--only-title"


def engine_args(words: tuple[str, ...]) -> tuple[str, ...]:
    """The suites' pytest arguments that run only the tests named by ``words`` (none: all)."""
    if not words:
        return ()
    return ("-p", __name__, *(arg for word in words for arg in (OPTION, word)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, action="append", default=[], dest="only_title",
                     help="run only the tests whose name holds this word (repeatable)")


@pytest.hookimpl(tryfirst=True)          # before the kit's plugin numbers and records the tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    words = config.getoption("only_title")
    if not words:
        return
    kept, dropped = [], []
    for item in items:
        record = record_of(item)
        name = f"{record.exercise} · {record.title}"
        (kept if any(word in name for word in words) else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept
