"""Autograding kit for a course on attention mechanisms.

Layout (docs/ARCHITECTURE.md places every module):
    contract.py        the exercises: files, contract names, points, banned APIs, default or opt-in
    intake/            submission (folder / zip / files / notebooks) -> source per exercise
    grading.py         the engine: intake -> sandbox -> suites (plugin.py) -> results.json
    plugin.py          the pytest plugin between the hidden suites and the sandbox
    budget.py          per-exercise time budgets
    results.py         Gradescope results.json and per-exercise outcomes
    sandbox/           worker process, isolation levels, proxy, wire format, limits
    suites/            hidden pytest suites, one folder per exercise
    diagnosis/         known mistakes, named in failure messages
    support/           helpers that run inside the worker
    cli.py             `python -m autograder ...` (front ends: grade, check, batch, release, build)
    check.py           students' `check` (student_pytest.py: the same under plain pytest)
    batch.py           a whole class (jobs.py: isolated jobs; gradebook.py: CSV and summary)
    staff/             the course staff's outputs: report.html, LMS gradebooks, late policy, similarity
    packaging/         student release, Gradescope zip, its simulation and Docker replica
    interop/           nbgrader and otter exports, and the adapter they call
"""

from pathlib import Path as _Path

__version__ = "0.1.0"
PACKAGE_DIR = _Path(__file__).resolve().parent      # this copy of the kit's package


def repo_root() -> _Path:
    """The folder that holds this copy of the kit (a checkout, an unpacked zip, site-packages)."""
    return PACKAGE_DIR.parent
