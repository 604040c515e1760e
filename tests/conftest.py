"""Shared set-up of the kit's own tests: the zygote first, a worker user per test process, and
the fixtures several test files need.

Production graders grade once per process and start the zygote first thing. This test
process grades hundreds of times after loading everything, so it does the same up front:
workers are then forked from a process that holds no reference code and has no torch
thread pool running (see ``autograder.sandbox.forkserver.shared``). The isolation level is
probed here too, once, before any test can monkeypatch what the probe uses.

Scheduling (``make test``: ``pytest -n 2 --dist loadgroup``, :mod:`scheduling`): each test file
is a unit run by one process (its module fixtures built once), except the files in
``scheduling.SPREAD``, whose independent tests are handed out one at a time to whichever
process is free; their gradings are shared by every process (``gradings.py``). Units are
handed out longest first, by the durations of a recorded run (``durations.json``), so the run
ends on short units and no file runs alone at the end.
The units are this file's own scheduler (:class:`FileUnits`), not ``xdist_group`` markers:
xdist 3.8 marks a group by rewriting ``item._nodeid``, which pytest 9.2 no longer reads, so
every file's module fixtures were silently built once per process.
Each test process has worker users of its own (``helpers.worker_user``), the default one
through ``AUTOGRADER_WORKER_USER``, so processes never sweep each other's workers.
``make check`` leaves out the :data:`SLOW` files and the long ones (``-m "not slow"``, :data:`QUICK_S`).

The run's first process byte-compiles the kit before anything grades (``helpers.compile_kit``):
with ``PYTHONDONTWRITEBYTECODE`` set, every fresh grader compiled it again otherwise.
The first test process also starts the Docker replica's image build in the background once it
has collected the replica test (``replica_prebuild.py``): minutes of network and disk waits
that no longer hold a test process.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from autograder.sandbox import forkserver, levels
from autograder.sandbox.limits import WORKER_USER_ENV
from gradings import Gradings
from helpers import ROOT, compile_kit, kit_modes_restored, worker_user
import replica_prebuild
import scheduling

if "PYTEST_XDIST_WORKER" not in os.environ:     # the first process of the run, before any grader
    compile_kit()
os.environ[WORKER_USER_ENV] = worker_user("default")     # grade, batch and check default to it
levels.detect()
forkserver.shared()

# Two test processes share two cores with the workers of their gradings: this process's own
# torch work (references, the engine's tests) runs on one thread, as a grader's does
# (autograder/suites/conftest.py), so OpenMP threads never spin for cores the others hold.
import torch  # noqa: E402  (after the zygote: it forks from a process without a thread pool)
torch.set_num_threads(1)

# `make check` (-m "not slow") leaves out these files (the Docker replica, real otter/nbgrader
# runs, built zips and wheels, corpora under other secrets, process-lifetime and cluster runs)
# and every file that took longer than QUICK_S in the recorded run (durations.json: the corpora
# graded case by case, the hostile lists), so that it stays a few minutes as the suite grows.
# `make test` runs them all.
QUICK_S = 45.0
SLOW = {"test_replica.py", "test_gradescope.py", "test_interop_otter.py", "test_interop_nbgrader.py",
        "test_wheel_install.py", "test_seed_sweep.py", "test_lifetime.py", "test_batch_cluster.py",
        "test_batch_resume.py", "test_warm_isolation.py", "test_hostile_user_level.py", "test_notebooks.py",
        "test_held_out_corpus.py", "test_staff_class.py"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", metavar="FILE", default=None,
                     help="write how long each test file took (the order of later runs: scheduling.py)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--record-durations")
    if path and not hasattr(config, "workerinput"):      # the process that sees every report
        config.pluginmanager.register(scheduling.Recorder(Path(path)), "record-durations")


def pytest_sessionfinish(session: pytest.Session) -> None:
    recorder = session.config.pluginmanager.get_plugin("record-durations")
    if recorder is not None:
        recorder.write()
    if _PREBUILD and _PREBUILD[0].poll() is None:    # the replica test did not run to wait for it
        _PREBUILD[0].terminate()
        _PREBUILD[0].wait(timeout=60)


REPLICA_TEST = "test_replica.py::test_replica_grades_like_gradescope"
_PREBUILD: list[subprocess.Popen] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """The first test process starts building the Docker replica's image in the background
    (tests/replica_prebuild.py) as soon as it knows the replica test will run and Docker
    answers: the build mostly waits on the network and the disk, and the test, whenever its
    turn comes, waits for it and reuses the image."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return
    if not any(item.nodeid.endswith(REPLICA_TEST) for item in session.items):
        return
    from autograder.packaging.verify import replica
    if not replica.docker_available()[0]:
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    with open(Path(tempfile.gettempdir()) / replica_prebuild.LOG_NAME, "w", encoding="utf-8") as log:
        _PREBUILD.append(subprocess.Popen([sys.executable, replica_prebuild.__file__], cwd=ROOT, env=env,
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest units first (collection order is the order they are handed out: scheduling.py);
    the files ``make check`` leaves out marked ``slow``: :data:`SLOW`, and those that took longer
    than :data:`QUICK_S` (a file the record does not know yet stays in: it is being written)."""
    durations = scheduling.Durations.load()
    order = {nodeid: i for i, nodeid in enumerate(scheduling.longest_first(
        [item.nodeid for item in items], durations))}
    items.sort(key=lambda item: order[item.nodeid])
    for item in items:
        if item.path.name in SLOW or durations.files.get(item.path.name, 0.0) > QUICK_S:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)       # a hook of xdist's: none without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With ``--dist loadgroup``: whole files (and single tests of ``scheduling.SPREAD`` files)
    handed out in collection order (longest first), each to whichever process is free."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scheduling.unit_of(nodeid)

    config.option.loadscopereorder = False          # keep the longest-first order
    return FileUnits(config, log)


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def gradings(tmp_path_factory, worker_id) -> Gradings:
    """Corpus cases graded once per run, shared by every test process (gradings.py)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base       # xdist: <run>/popen-gwN
    return Gradings(shared / "gradings")


@pytest.fixture(scope="session")
def outside_python_path() -> Path:
    """A Python outside /root with what grading needs (the user level refuses one under a 0700
    /root): made once per machine, see ``outside_python.py``."""
    from outside_python import outside_python
    return outside_python()


@pytest.fixture(scope="module")
def kit_modes_kept() -> Iterator[None]:
    with kit_modes_restored():
        yield


@pytest.fixture
def world_readable_folder() -> Iterator[Path]:
    """A folder any user may read and enter, as a TA's class folder often is (pytest's own
    temporary folders are 0700: too easy a test of what the worker users can see)."""
    folder = Path(tempfile.mkdtemp(prefix="ag-class-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
