"""Grading one submission through the real CLI at a chosen isolation level, for the hostile
cases that must hold at every level (tests/test_hostile_trees.py, tests/test_hostile_round4.py).

* ``namespaces``: root, auto-detected (this machine allows namespaces), the kit's own Python;
* ``user``: root, ``--isolation user``, a Python outside ``/root`` (tests/outside_python.py); the
  kit folders it locks get their modes back afterwards;
* ``process``: the grader itself runs as ``nobody`` (``setpriv``), from a copy of the kit that
  ``nobody`` can read, with that same outside Python: the level a non-root machine gets.

Each level has its own worker user (``ag-round4``): runs of this module's users never share one
with another test file's.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import results
from helpers import kit_modes_restored
import warm_cli
from outside_python import outside_python

ROOT = Path(__file__).resolve().parents[1]
IS_ROOT = os.geteuid() == 0
NOBODY = 65534
WORKER_USER = "ag-round4"
RUN_BUDGET_S = 400

LEVELS = [
    pytest.param("namespaces", id="namespaces",
                 marks=pytest.mark.skipif(not IS_ROOT, reason="the namespaces level needs root")),
    pytest.param("user", id="user", marks=pytest.mark.skipif(not IS_ROOT, reason="the user level needs root")),
    pytest.param("process", id="process-nonroot",
                 marks=pytest.mark.skipif(not IS_ROOT or shutil.which("setpriv") is None,
                                          reason="running the grader as nobody needs root and setpriv")),
]


@dataclass
class Run:
    data: dict
    stderr: str
    returncode: int

    def tests(self, ex: str) -> list[dict]:
        return [t for t in self.data["tests"] if results.exercise_of_result(t) == ex]

    def score(self, ex: str) -> float:
        return round(sum(float(t["score"]) for t in self.tests(ex)), 4)

    def max_score(self, ex: str) -> float:
        return round(sum(float(t["max_score"]) for t in self.tests(ex)), 4)

    def full(self, ex: str) -> bool:
        return self.max_score(ex) > 0 and self.score(ex) == self.max_score(ex)

    def outputs(self, ex: str) -> str:
        return "\n".join(str(t.get("output", "")) for t in self.tests(ex))

    @property
    def level(self) -> str:
        return str(self.data.get("extra_data", {}).get("isolation", ""))


def open_folder(prefix: str) -> Path:
    """A folder in /var/tmp that every level's grader (and its worker) can use."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    folder.chmod(0o1777)
    return folder


_KIT_COPY: list[Path] = []


def readable_kit() -> Path:
    """A copy of the kit ``nobody`` can read (made once per test session)."""
    if not _KIT_COPY:
        base = Path(tempfile.mkdtemp(prefix="ag-round4-kit-", dir="/var/tmp"))
        base.chmod(0o755)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "SEED_SECRET")
        for name in ("autograder", "reference"):
            shutil.copytree(ROOT / name, base / "source" / name, ignore=ignore)
        for path in [base / "source", *(base / "source").rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        _KIT_COPY.append(base / "source")
        atexit.register(shutil.rmtree, base, True)          # the session's copy goes with it
    return _KIT_COPY[0]


def grade(level: str, submission: Path, exercises: str, out: Path, *, timeout: float = 10.0,
          env_extra: dict | None = None) -> Run:
    """Grade ``submission`` at ``level``; the CLI must exit 0 with a schema-valid results.json."""
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    prefix: list[str] = []
    python, kit = str(ROOT / ".venv" / "bin" / "python"), ROOT
    extra = ["--worker-user", WORKER_USER]
    if level == "user":
        python = str(outside_python())
        extra += ["--isolation", "user"]
    elif level == "process":
        python, kit = str(outside_python()), readable_kit()
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        extra = ["--isolation", "process"]
        out.chmod(0o777)
        os.chown(out, NOBODY, NOBODY)
        _open_to_nobody(submission)
    cmd = [*prefix, python, "-m", "autograder", "grade", str(submission), "--exercises", exercises,
           "--results", str(results_path), "--timeout", str(timeout), *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(PYTHONPATH=str(kit), PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", PYTHONHASHSEED="0",
               **(env_extra or {}))
    with kit_modes_restored():
        proc = warm_cli.run(cmd, cwd=out, env=env, timeout=RUN_BUDGET_S)     # warm at the root levels
    stderr = proc.stderr.decode(errors="replace")
    assert results_path.exists(), f"no results.json ({proc.returncode}): {stderr[-3000:]}"
    data = json.loads(results_path.read_text(encoding="utf-8"))
    results.validate(data)
    run = Run(data, stderr, proc.returncode)
    assert proc.returncode == 0, f"the CLI failed ({proc.returncode}): {stderr[-3000:]}"
    assert run.level == level, f"graded at {run.level!r}, not {level!r}: {stderr[-2000:]}"
    return run


def _open_to_nobody(path: Path) -> None:
    """The submission readable by the grader running as nobody (it lies in an
    :func:`open_folder`)."""
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if not item.is_symlink():
            item.chmod((item.stat().st_mode & 0o7777) | (0o755 if item.is_dir() else 0o644))
