"""Helpers for the kit's own tests: build a submission folder and grade it for real."""
from __future__ import annotations

import shutil
from pathlib import Path

from autograder import contract
from autograder.grading import GradeRequest, grade
from autograder.results import Results
from autograder.sandbox import SandboxConfig

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
ASSIGNMENTS = ROOT / "assignments"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"


def make_submission(tmp: Path, files: dict[str, str | Path]) -> Path:
    """``{"attention.py": source or path}`` -> a submission folder under ``tmp``."""
    folder = tmp / "submission"
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content)
    return folder


def solution_file(exercise_id: str) -> Path:
    ex = contract.BY_ID[exercise_id]
    return SOLUTIONS / ex.folder / ex.filename


def grade_folder(folder: Path, exercises: str | None = None, results_path: Path | None = None,
                 **limits) -> Results:
    config = SandboxConfig(**({"call_timeout": 20.0} | limits))
    return grade(GradeRequest(submission=folder, results_path=results_path,
                              exercises=contract.select(exercises), config=config))


def failed_titles(results: Results) -> list[str]:
    return [t.name for t in results.tests if not t.passed]
