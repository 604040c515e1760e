"""The hostile corpus's root cases again, at the *user* isolation level (issue 9).

Gradescope runs containers with Docker's default privileges: no namespaces, so the worker is
kept out of the kit by ownership and permissions only (see autograder/sandbox/harden.py).
Every case of ``tests/test_hostile.py`` that needs the unprivileged worker user is graded
here through the real CLI with ``--isolation user``, with the same expectations and checks,
by a Python installed outside ``/root`` (this machine's own venv lives under a 0700 ``/root``,
which the user level rightly refuses: the worker could not import from it).

The grader locks this checkout's kit folders for the worker user (root-owned, 0700) as it
would on Gradescope; the module puts their modes back afterwards.

Cases whose result may differ at this level (where it honestly cannot protect): none.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import test_hostile as base
from outside_python import outside_python

AGTEST = Path("/opt/agtest-venv/bin/python")
WORKER = "ag-hostile-user"             # not test_isolation_levels' ag-iso: both may run at once
ROOT_CASES = [name for name, spec in base.CASES.items() if spec.root]
KIT_FOLDERS = ("autograder", "reference", "solutions", "tests", "assignments", "dist", ".git")

pytestmark = pytest.mark.skipif(not base.IS_ROOT, reason="the user level needs root (a worker user)")


@pytest.fixture(scope="module")
def user_level():
    outside_python()
    saved = {}
    for name in KIT_FOLDERS:
        path = base.ROOT / name
        if path.exists():
            info = path.stat()
            saved[path] = (info.st_mode & 0o7777, info.st_uid, info.st_gid)
    patch = pytest.MonkeyPatch()
    patch.setattr(base, "PYTHON", str(AGTEST))
    patch.setattr(base, "WORKER_USER", WORKER)
    patch.setattr(base, "EXTRA_ARGS", ("--isolation", "user", "--worker-user", WORKER))
    patch.setattr(base, "_GRADED", {})
    patch.setenv("PYTHONPATH", str(base.ROOT))
    try:
        yield
    finally:
        patch.undo()
        for path, (mode, uid, gid) in saved.items():
            os.chown(path, uid, gid)
            os.chmod(path, mode)


@pytest.mark.parametrize("case", ROOT_CASES)
def test_hostile_submission_at_user_level(case: str, user_level, tmp_path_factory):
    base.test_hostile_submission(case, tmp_path_factory)
    run = base._GRADED[case]
    assert run.data["extra_data"]["isolation"] == "user", run.stderr[-2000:]
    assert "isolation: user" in run.stderr
