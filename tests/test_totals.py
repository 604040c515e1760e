"""Per exercise, the tests' max_score values add up EXACTLY to the configured total.

An instructor adds a test file with odd weights to (a copy of) a suite, or builds with awkward
``--points``; results.json, the summary, ``batch``'s CSV and the public-only run behind
``check`` must all show exact totals (20, never 19.9998).
"""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import re
import shutil
import subprocess
import sys
import zipfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from autograder import contract, gradebook, results
from autograder.batching.discovery import Entry
from autograder.batching.runner import Row, Runner
from autograder.grading import SUITES_DIR, GradeRequest, grade, scale_to_totals
from autograder.sandbox import SandboxConfig

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"

# Three new hidden tests with weights that do not divide 20 (or 7) evenly.
ODD_WEIGHTS_FILE = '''
import pytest


@pytest.mark.points(1)
def test_odd_one(student):
    """odd weight one"""
    assert student.multihead.split_heads is not None or True


@pytest.mark.points(0.37)
def test_odd_two(student):
    """odd weight two"""


@pytest.mark.points(3.3333)
def test_odd_three(student):
    """odd weight three"""
'''


def _exact_sum(values) -> Decimal:
    """The sum of values as written in the JSON (decimal strings), exactly."""
    return sum((Decimal(repr(float(v))) for v in values), Decimal(0))


@pytest.fixture(scope="module")
def suites_copy(tmp_path_factory) -> Path:
    """A copy of the kit's suites folder (ini, ex1, ex3) with an odd-weights file added to ex3."""
    root = tmp_path_factory.mktemp("suites") / "suites"
    root.mkdir()
    shutil.copy(SUITES_DIR / "pytest.ini", root / "pytest.ini")
    for folder in ("ex1_attention", "ex3_multihead"):
        shutil.copytree(SUITES_DIR / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (root / "ex3_multihead" / "test_9_instructor_added.py").write_text(ODD_WEIGHTS_FILE)
    return root


def _solutions_folder(tmp: Path, *exercise_ids: str) -> Path:
    folder = tmp / "solutions"
    folder.mkdir(exist_ok=True)
    for ex_id in exercise_ids:
        ex = contract.BY_ID[ex_id]
        shutil.copy(SOLUTIONS / ex.folder / ex.filename, folder / ex.filename)
    return folder


def _with_points(**points: float) -> tuple[contract.Exercise, ...]:
    return tuple(dataclasses.replace(contract.BY_ID[ex_id], points=float(total))
                 for ex_id, total in points.items())


# --------------------------------------------------------------------------- the arithmetic

@pytest.mark.parametrize("total", [20, 7, 10, 33.3333, 0.5, 1, 100, 17.25])
def test_split_total_adds_up_exactly(total):
    rng = random.Random(int(total * 10_000))
    for n in (1, 2, 3, 7, 13, 25, 61):
        weights = [rng.choice([1, 0.37, 3.3333, 2, 0.5, 1e-3, 7]) for _ in range(n)]
        parts = results.split_total(total, weights)
        assert _exact_sum(parts) == Decimal(repr(round(total, 4)))
        whole = sum(Fraction(w) for w in weights)
        for part, weight in zip(parts, weights):       # each part is its share, to 10**-4
            assert abs(Fraction(part) - Fraction(total) * Fraction(weight) / whole) < Fraction(1, 10_000)


def test_split_total_degenerate_weights():
    assert results.split_total(20, [0, 0]) == [0.0, 0.0]
    assert results.split_total(20, [0, 1, 0]) == [0.0, 20.0, 0.0]
    assert results.split_total(20, []) == []


def test_scale_to_totals_full_marks_are_the_total():
    tests = [results.TestResult("ex3", f"t{i}", w, passed=True) for i, w in enumerate([1, 1, 1, 0.37])]
    scaled = scale_to_totals(tests, _with_points(ex3=20))
    assert results.Results(tests=scaled).score == 20.0
    assert results.Results(tests=scaled).by_exercise() == {"ex3": (20.0, 20.0)}


# --------------------------------------------------------------------------- a real grade

@pytest.mark.parametrize("points", [{"ex1": 20, "ex3": 20}, {"ex1": 10, "ex3": 7}, {"ex1": 33.3333, "ex3": 0.7}])
def test_odd_weights_and_awkward_totals_add_up(tmp_path, suites_copy, points):
    """The ex3 copy has 3 more tests with weights 1, 0.37 and 3.3333; the solutions score
    exactly each total, in Results, the summary and results.json."""
    exercises = _with_points(**points)
    results_path = tmp_path / "results.json"
    outcome = grade(GradeRequest(submission=_solutions_folder(tmp_path, "ex1", "ex3"),
                                 results_path=results_path, exercises=exercises,
                                 suites_dir=suites_copy, in_process=True,
                                 config=SandboxConfig()))
    assert any(t.title == "odd weight two" for t in outcome.tests)        # the copy was graded
    data = json.loads(results_path.read_text())
    results.validate(data)
    total = sum(Decimal(repr(float(v))) for v in points.values())
    assert Decimal(repr(data["score"])) == total
    per_exercise = {ex: [t for t in data["tests"] if t["tags"] == [ex]] for ex in points}
    for ex_id, expected in points.items():
        tests = per_exercise[ex_id]
        assert _exact_sum(t["max_score"] for t in tests) == Decimal(repr(float(expected)))
        assert _exact_sum(t["score"] for t in tests) == Decimal(repr(float(expected)))
        fate = results.outcomes_from_json(data)[ex_id]
        assert (fate.status, fate.score, fate.max_score) == ("graded", float(expected), float(expected))
        title = contract.BY_ID[ex_id].title
        assert f"{ex_id} {title}: {float(expected):g} / {float(expected):g}" in outcome.output
    assert outcome.output.startswith(f"Total: {float(total):g} / {float(total):g}")

    # batch reads the same file into its gradebook row: exact in the CSV too
    entry = Entry(student="Ada, \"the\"\nfirst | one", key="ada", path=tmp_path / "solutions")
    with Runner(tmp_path / "batch", exercises) as runner:
        row = runner._read(Row(entry=entry), results_path, 0, b"")
    assert row.status == "ok" and row.reason == ""
    gradebook.write_csv(tmp_path / "grades.csv", [row], exercises)
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as handle:
        (csv_row,) = list(csv.DictReader(handle))
    for ex_id, expected in points.items():
        assert csv_row[ex_id] == f"{float(expected):g}"
    assert csv_row["total"] == csv_row["max_total"] == f"{float(total):g}"
    assert "\n" not in csv_row["student"]             # one line, whatever the name holds


def test_public_only_run_adds_up(tmp_path, suites_copy):
    """The path behind `check` (public tests only) shares the exercise total exactly too."""
    exercises = _with_points(ex1=7, ex3=10)
    outcome = grade(GradeRequest(submission=_solutions_folder(tmp_path, "ex1", "ex3"), exercises=exercises,
                                 suites_dir=suites_copy, in_process=True, public_only=True))
    assert outcome.tests and all(t.visibility == "visible" for t in outcome.tests)
    assert {o.exercise: (o.score, o.max_score) for o in outcome.exercises} == {"ex1": (7.0, 7.0),
                                                                              "ex3": (10.0, 10.0)}
    assert outcome.score == 17.0


def test_build_points_zip_adds_up(tmp_path):
    """`build --points ex1=10,ex3=7` (totals that do not divide the weights evenly): the
    unzipped kit grades the solutions to exactly 10 + 7 in results.json."""
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "autograder", "build", "--only", "gradescope", "--exercises",
                    "ex1,ex3", "--points", "ex1=10,ex3=7", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    source = tmp_path / "source"
    with zipfile.ZipFile(out / "autograder.zip") as archive:
        archive.extractall(source)
    results_path = tmp_path / "results" / "results.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(_solutions_folder(tmp_path, "ex1", "ex3")),
                           "--exercises", "ex1,ex3", "--results", str(results_path), "--in-process"],
                          cwd=source, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(source),
                                           "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(results_path.read_text())
    assert data["score"] == 17.0
    fates = results.outcomes_from_json(data)
    assert (fates["ex1"].max_score, fates["ex3"].max_score) == (10.0, 7.0)
    for ex_id, expected in (("ex1", "10"), ("ex3", "7")):
        tests = [t for t in data["tests"] if t["tags"] == [ex_id]]
        assert _exact_sum(t["max_score"] for t in tests) == Decimal(expected)
    assert "ex3 Multi-head attention: 7 / 7" in proc.stdout


def test_build_points_reach_the_release_check_text(tmp_path):
    """`build --points ex1=30`: the release it zips tells students, through `check`, what the
    public tests are worth out of 30 (not out of the exercise's own 20)."""
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "autograder", "build", "--only", "release", "--exercises", "ex1,ex3",
                    "--points", "ex1=30", "--out", str(out)], cwd=ROOT, check=True, capture_output=True,
                   timeout=600)
    with zipfile.ZipFile(out / "release.zip") as archive:
        archive.extractall(tmp_path / "release")
    release = tmp_path / "release" / "assignments"
    worth = json.loads((release / "autograder" / "suites" / "public_worth.json").read_text())
    assert (worth["ex1"]["points"], worth["ex3"]["points"]) == (30.0, 20.0)
    for ex in contract.select("ex1,ex3"):
        shutil.copy(ROOT / "solutions" / ex.folder / ex.filename, release / ex.folder / ex.filename)
    proc = subprocess.run([sys.executable, "-m", "autograder", "check"], cwd=release,
                          env={**os.environ, "PYTHONPATH": str(release), "MPLBACKEND": "Agg"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"worth [\d.]+ of ex1's 30 points", proc.stdout), proc.stdout
    assert re.search(r"worth [\d.]+ of ex3's 20 points", proc.stdout), proc.stdout
    assert "of the 50 points of the real grade" in proc.stdout, proc.stdout
