"""The hostile corpus's root cases again, at the *user* isolation level.

Gradescope runs containers with Docker's default privileges: no namespaces, so the worker is
kept out of the kit by ownership and permissions (see autograder/sandbox/harden.py) and, where
the kernel has it, by Landlock. Every case of the corpus (``tests/hostile_cases.py``) that
needs the unprivileged worker user is graded here through the real CLI with
``--isolation user``, with the same expectations and checks, by a Python installed outside
``/root`` (this machine's own venv lives under a 0700 ``/root``, which the user level rightly
refuses: the worker could not import from it).

The grader locks this checkout's kit folders for the worker user (root-owned, 0700) as it
would on Gradescope; the ``kit_modes_kept`` fixture puts their modes back afterwards.

Cases whose result may differ at this level (where it honestly cannot protect): none.
"""
from __future__ import annotations

import pytest

from helpers import worker_user
from hostile_cases import CASES, IS_ROOT, Corpus, Grading, grade_and_check
from outside_python import PYTHON as AGTEST

ROOT_CASES = [name for name, spec in CASES.items() if spec.root]

pytestmark = pytest.mark.skipif(not IS_ROOT, reason="the user level needs root (a worker user)")


@pytest.fixture(scope="module")
def corpus(outside_python_path, kit_modes_kept, tmp_path_factory) -> Corpus:
    grading = Grading(python=str(AGTEST), user=worker_user("hostile-user"), extra_args=("--isolation", "user"))
    return Corpus(grading, tmp_path_factory)


@pytest.mark.parametrize("case", ROOT_CASES)
def test_hostile_submission_at_user_level(case: str, corpus: Corpus, tmp_path_factory):
    run = grade_and_check(case, corpus, tmp_path_factory)
    assert run.data["extra_data"]["isolation"] == "user", run.stderr[-2000:]
    assert "isolation: user" in run.stderr
