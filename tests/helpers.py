"""The kit's own tests' one helper module: build a submission, grade it for real (in this
process or through the CLI), and name the worker user a test grades as.

Worker users are per test process: ``pytest -n`` runs test files on several workers at
once, and at the user level a grader's sweep kills every process of its worker user, so two
test processes must never share one. :func:`worker_user` makes the name from the xdist
worker's id and a role; within one test process tests run one at a time.
"""
from __future__ import annotations

import compileall
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from autograder import contract, results

import warm_cli

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
ASSIGNMENTS = ROOT / "assignments"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
GRADE_TIMEOUT_S = 300
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
SPEC_NAME = Path("shared") / "spec" / "EXERCISES.md"


def compile_kit() -> None:
    """Byte-compile the kit (``autograder/``, ``reference/``) in place, before anything grades.

    The tests start hundreds of fresh graders (``python -m autograder``, forked graders and
    zygotes) and import the hidden suites afresh for every grading. Where
    ``PYTHONDONTWRITEBYTECODE`` is set (this machine, CI, and ``run_autograder`` on Gradescope)
    none of them may cache what it compiled, so each one compiled the kit again: 0.9 s of CPU
    per fresh ``grade`` of the solutions (``bench/ab_grade.py``, a kit with and without
    ``__pycache__``). Up-to-date files are skipped; a file that does not compile is left for
    its import to report.
    """
    for package in ("autograder", "reference"):
        compileall.compile_dir(ROOT / package, quiet=2)


def published_contract() -> Path:
    """The published contract, ``shared/spec/EXERCISES.md`` beside the checkout (or a folder
    above it: worktrees sit one level deeper). The tests that check the kit against it fail,
    saying so, where it is missing: clone the kit beside ``shared/``."""
    for folder in ROOT.parents:
        if (folder / SPEC_NAME).is_file():
            return folder / SPEC_NAME
    import pytest
    pytest.fail(f"the published contract ({SPEC_NAME}) is not beside this checkout ({ROOT}): "
                "the tests that check the kit against it need it")


# --------------------------------------------------------------------------- worker users

def worker_user(role: str) -> str:
    """``ag-<xdist worker>-<role>`` (``ag-w0-hostile``; ``ag-m-…`` outside xdist): a worker
    user no other test process uses at the same time. At most 32 characters."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    process = f"w{worker.removeprefix('gw')}" if worker else "m"
    return f"ag-{process}-{role}"[:32]


# --------------------------------------------------------------------------- the checkout

KIT_FOLDERS = ("autograder", "reference", "solutions", "tests", "assignments", "dist", ".git")


@contextlib.contextmanager
def kit_modes_restored() -> Iterator[None]:
    """The user level locks this checkout's kit folders for the worker user (root-owned,
    0700), as on Gradescope: put their owners and modes back afterwards.

    Held by one test process at a time (:func:`_kit_modes_held`): the user level checks that
    the worker user cannot read these folders each time it starts a worker, so another test
    process putting the modes back in the middle of a user-level grading failed that
    grading's next worker start (``SandboxStartError``, seen once in CI)."""
    with _kit_modes_held():
        saved = {ROOT / n: (ROOT / n).stat() for n in KIT_FOLDERS if (ROOT / n).exists()}
        try:
            yield
        finally:
            for path, info in saved.items():
                os.chown(path, info.st_uid, info.st_gid)
                os.chmod(path, stat.S_IMODE(info.st_mode))


class _KitModesLock:
    """A file lock shared by every test process of this checkout, re-entrant in one process
    (a module's fixture holds it around tests that take it again)."""
    depth = 0
    handle = None


@contextlib.contextmanager
def _kit_modes_held() -> Iterator[None]:
    if _KitModesLock.depth == 0:
        tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        handle = open(Path(tempfile.gettempdir()) / f"ag-kit-modes-{tag}.lock", "w")
        fcntl.flock(handle, fcntl.LOCK_EX)
        _KitModesLock.handle = handle
    _KitModesLock.depth += 1
    try:
        yield
    finally:
        _KitModesLock.depth -= 1
        if _KitModesLock.depth == 0:
            _KitModesLock.handle.close()               # closing the file releases the lock
            _KitModesLock.handle = None


# --------------------------------------------------------------------------- submissions

def solution_file(exercise_id: str) -> Path:
    ex = contract.BY_ID[exercise_id]
    return SOLUTIONS / ex.folder / ex.filename


def solution(exercise_id: str) -> str:
    return solution_file(exercise_id).read_text()


def stub_source(exercise_id: str = "ex1") -> str:
    """The solution with every solution region replaced by ``raise NotImplementedError``."""
    out, inside = [], False
    for line in solution(exercise_id).splitlines():
        marker = line.strip()
        if marker == MARKERS[0]:
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + "raise NotImplementedError")
        elif marker == MARKERS[1]:
            inside = False
        elif not inside:
            out.append(line)
    assert not inside, f"unbalanced solution markers in the {exercise_id} solution"
    return "\n".join(out) + "\n"


def write_submission(folder: Path, files: dict[str, str | Path]) -> Path:
    """``{"attention.py": source text or a file to copy}`` -> the folder ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content)
    return folder


def make_submission(tmp: Path, files: dict[str, str | Path]) -> Path:
    """``files`` as a submission folder ``tmp/submission``."""
    return write_submission(tmp / "submission", files)


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


# --------------------------------------------------------------------------- grading in this process

def grade_folder(folder: Path, exercises: str | None = None, results_path: Path | None = None,
                 only: tuple[str, ...] = (), pytest_extra: tuple[str, ...] = (), **limits) -> results.Results:
    """Grade ``folder`` with the engine in this process (workers forked from this process's
    zygote, started by conftest.py), as this test process's own worker user; ``only``: run
    only the tests whose name holds one of these words (``only_titles.py``); ``pytest_extra``:
    more arguments for the suites' pytest."""
    import only_titles
    from autograder.grading import GradeRequest, grade
    from autograder.sandbox import SandboxConfig

    config = SandboxConfig(**({"call_timeout": 20.0, "user": worker_user("engine")} | limits))
    return grade(GradeRequest(submission=folder, results_path=results_path,
                              exercises=contract.select(exercises), config=config,
                              pytest_extra=(*only_titles.engine_args(only), *pytest_extra)))


def failed_titles(outcome: results.Results) -> list[str]:
    return [t.name for t in outcome.tests if not t.passed]


# --------------------------------------------------------------------------- grading through the CLI

@dataclass
class Graded:
    """What ``python -m autograder grade`` left: results.json, its output and exit code."""
    data: dict
    stdout: str
    stderr: str
    returncode: int

    @property
    def fates(self) -> dict[str, results.ExerciseOutcome]:
        return results.outcomes_from_json(self.data)

    def tests(self, exercise: str) -> list[dict]:
        return [t for t in self.data["tests"] if results.exercise_of_result(t) == exercise]

    def outputs(self, exercise: str) -> list[str]:
        return [str(t.get("output", "")) for t in self.tests(exercise)]


def grader_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONHASHSEED="0")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def grade_command(submission: Path, results_path: Path, *args: str, role: str = "cli") -> list[str]:
    return [sys.executable, "-m", "autograder", "grade", str(submission), "--results", str(results_path),
            "--worker-user", worker_user(role), *args]


def grade_cli(submission: Path, tmp: Path, *args: str, role: str = "cli") -> Graded:
    """``python -m autograder grade`` (cwd: a scratch folder), forked warm (:mod:`warm_cli`)."""
    results_path = tmp / "results" / "results.json"
    work = tmp / "cwd"
    work.mkdir(parents=True, exist_ok=True)
    proc = warm_cli.run(grade_command(submission, results_path, *args, role=role), cwd=work,
                        env=grader_env(), text=True, timeout=GRADE_TIMEOUT_S)
    data = json.loads(results_path.read_text(encoding="utf-8"))
    results.validate(data)
    return Graded(data, proc.stdout, proc.stderr, proc.returncode)


def deep_chain(base: Path, depth: int, name: str = "d", leaf: str = "leaf.txt") -> Path:
    """``base/name/name/…`` ``depth`` folders deep (made relative to descriptors: no path is
    ever that long), a file at the bottom; the top folder."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return base / name
