"""ex5 hidden suite: the recall test's set-up, searched beside the tests that run before it.

The search trains the reference only (``recall.py``): it starts on a thread of the grader at
ex5's first hidden test, when this grading runs the recall test at all, and is waited for by the
recall test's ``recall_setup`` fixture (or stopped when the session ends without it).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from autograder.suites.ex5_lstm_comparison import recall


def _recall_test(session: pytest.Session) -> pytest.Item | None:
    here = Path(recall.__file__).parent
    return next((item for item in session.items
                 if item.name == recall.TEST_NAME and Path(item.path).parent == here), None)


class _Slot:
    """This grading session's search: not started yet, started (``search``), or not needed (None)."""
    started = False
    search: recall.InBackground | None = None


@pytest.fixture(scope="session")
def _recall_slot() -> Iterator[_Slot]:
    slot = _Slot()
    yield slot
    if slot.search is not None:
        slot.search.close()


@pytest.fixture(autouse=True)
def _recall_search(request: pytest.FixtureRequest, _recall_slot: _Slot) -> recall.InBackground | None:
    """Started at ex5's first hidden test: the hidden inputs' seeds are the current test's
    (a public test's are the public ones), and the recall test's are derived from them."""
    if not _recall_slot.started and request.node.get_closest_marker("public") is None:
        _recall_slot.started = True
        test = _recall_test(request.session)
        _recall_slot.search = recall.InBackground(test.nodeid) if test is not None else None
    return _recall_slot.search


@pytest.fixture
def recall_setup(_recall_search: recall.InBackground | None) -> tuple[int, float]:
    """(seed offset, the reference's held-out accuracy) of the recall test's set-up."""
    if _recall_search is not None:
        return _recall_search.result()
    return recall.solve(recall.candidates())
