"""Autograding kit for a course on attention mechanisms.

Layout (see docs/ARCHITECTURE.md):
    contract.py        the five exercises: files, contract names, banned APIs
    intake.py          submission (folder / zip / files / notebooks) -> source per exercise
    sandbox/           worker process, proxy, wire format, limits
    suites/            hidden pytest suites, one folder per exercise
    results.py         Gradescope results.json
    packaging/         student release, Gradescope zip, nbgrader and otter exports
    cli.py             `python -m autograder ...`
"""

__version__ = "0.1.0"
