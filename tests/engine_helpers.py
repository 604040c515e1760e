"""Helpers for the engine's tests (test_budget, test_outcome, test_hostile_engine): grade a
submission folder through the real CLI, in a subprocess, as its own worker user."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder import contract, results

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
WORKER_USER = "ag-eng"
GRADE_TIMEOUT_S = 300


@dataclass
class Graded:
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


def solution(exercise_id: str) -> str:
    ex = contract.BY_ID[exercise_id]
    return (SOLUTIONS / ex.folder / ex.filename).read_text()


def write_submission(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return folder


def grader_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONHASHSEED="0")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def grade_command(submission: Path, results_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "autograder", "grade", str(submission), "--results", str(results_path),
            "--worker-user", WORKER_USER, *args]


def grade_cli(submission: Path, tmp: Path, *args: str) -> Graded:
    """``python -m autograder grade`` in a subprocess (cwd: a scratch folder)."""
    results_path = tmp / "results" / "results.json"
    work = tmp / "cwd"
    work.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(grade_command(submission, results_path, *args), cwd=work, env=grader_env(),
                          capture_output=True, text=True, timeout=GRADE_TIMEOUT_S)
    data = json.loads(results_path.read_text(encoding="utf-8"))
    results.validate(data)
    return Graded(data, proc.stdout, proc.stderr, proc.returncode)


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
