"""The fixtures hidden suites declare: ``student``, ``support``, ``submission``.

Plain module-level fixtures, registered by :class:`autograder.plugin.GradingPlugin` when pytest
configures it, each reading that run's plugin from the config's stash. (Fixtures defined as
methods of the plugin instance are deprecated for session scope since pytest 9 and will stop
working in pytest 10.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from autograder.intake import Submission
    from autograder.plugin import GradingPlugin
    from autograder.sandbox import StudentModules

PLUGIN = pytest.StashKey["GradingPlugin"]()


@pytest.fixture(scope="session")
def student(request: pytest.FixtureRequest) -> "StudentModules":
    """The submission's modules, in the sandbox, every call under the exercise's budget."""
    return request.config.stash[PLUGIN].student()


@pytest.fixture(scope="session")
def support(request: pytest.FixtureRequest):
    """The kit's pristine support code, run in the worker next to the student's objects."""
    return request.config.stash[PLUGIN].support()


@pytest.fixture(scope="session")
def submission(request: pytest.FixtureRequest) -> "Submission":
    """What intake found: files, sources, problems (never run here)."""
    return request.config.stash[PLUGIN].submission
