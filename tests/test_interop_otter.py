"""otter-grader interop, verified with the real tool.

* The exported test files: one ``@test_case`` per kit test, the kit's points, ``hidden``
  = not public (fast, every exercise, no zip).
* The REAL ``otter generate`` zip: otter's own setup (conda, Chromium) is what it is; the kit
  ships inside it as support files.
* The REAL ``otter run`` (no Docker) on ex1's solution, stub and two realistic bugs: the
  score fraction equals the native grader's for the same file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from autograder import contract
from autograder.interop import adapter
from autograder.interop.otter import export_otter
from helpers import ASSIGNMENTS, make_submission, solution_file

VENV_BIN = Path(sys.executable).parent
EX = contract.BY_ID["ex1"]
BUGS = {   # realistic mistakes, made from the model solution
    "no_scaling": ("/ np.sqrt(d_k)", ""),
    "softmax_wrong_dim": ("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)"),
}


def _load_test_file(path: Path):
    from otter.test_files.exception_test import ExceptionTestFile
    return ExceptionTestFile.from_file(str(path))


def test_exported_test_files_mirror_the_kit(tmp_path: Path):
    export_otter(tmp_path, generate=False)
    for ex in contract.DEFAULT:                         # what the export holds by default
        tests = adapter.collect_tests(ex.id)
        if not tests:
            continue
        files = sorted((tmp_path / ex.folder / "tests").glob("*.py"))
        assert len(files) == len(adapter.groups(ex.id))
        cases = [tc for f in files for tc in _load_test_file(f).test_cases]
        assert len(cases) == len(tests), "one otter test case per kit test"
        by_name = {t.name: t for t in tests}
        for tc in cases:
            kit_test = by_name[tc.name]
            assert tc.points == pytest.approx(kit_test.points) and tc.hidden == (not kit_test.public)
        assert sum(tc.points for tc in cases) == pytest.approx(ex.points, abs=1e-3)
        assert (tmp_path / ex.folder / "files" / "autograder" / "interop" / "adapter.py").is_file()


def test_each_otter_assignment_has_its_own_seed_secret(tmp_path: Path):
    """Otter's students share a kernel with the kit's files: the secret they could read there
    is neither the checkout's (the native zip's hidden inputs) nor another assignment's."""
    from autograder import seeds
    seeds.load_secret()                                 # the checkout has one by now
    export_otter(tmp_path, generate=False)
    secrets = [(tmp_path / ex.folder / "files" / "autograder" / "SEED_SECRET").read_text().strip()
               for ex in contract.DEFAULT if adapter.collect_tests(ex.id)]
    assert len(secrets) >= 2 and all(seeds.parse_secret(s) for s in secrets)
    assert len(set(secrets)) == len(secrets)
    assert seeds.SECRET_FILE.read_text().strip() not in secrets
    assert not list(tmp_path.rglob(".SEED_SECRET.*"))


def _otter_run(zip_path: Path, submission: Path) -> dict:
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([str(VENV_BIN / "otter"), "run", "--no-logo", "-a", str(zip_path),
                           "-o", str(submission.parent), str(submission)],
                          cwd=submission.parent, env=env, capture_output=True, text=True, timeout=600)
    results = submission.parent / "results.json"
    assert done.returncode == 0 and results.is_file(), f"otter run failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    return {"json": json.loads(results.read_text()), "stdout": done.stdout}


@pytest.mark.slow
def test_real_otter_run_matches_native_grader(tmp_path: Path, gradings):
    started = time.monotonic()
    written = export_otter(tmp_path / "otter", (EX,))
    zip_path = next(p for p in written if p.name == "autograder.zip")
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        setup = archive.read("setup.sh").decode()
        # the assignment's own seed secret (never the checkout's): native grading uses it too,
        # so both draw the same hidden inputs
        secret = archive.read("files/autograder/SEED_SECRET").decode().strip()
    assert "files/autograder/interop/adapter.py" in names and "files/reference/attention.py" in names
    assert sum(n.startswith("tests/") for n in names) == len(adapter.groups(EX.id))
    # what otter's own image installs (hence the kit's native Gradescope zip)
    print("\notter setup.sh installs:", [w for w in ("Miniforge", "mamba env create", "chromium")
                                         if w.lower() in setup.lower()])

    solution = solution_file(EX.id).read_text()
    files = {"solution": solution, "stub": (ASSIGNMENTS / EX.folder / EX.filename).read_text()}
    for name, (old, new) in BUGS.items():
        assert old in solution, f"{name}: the solution no longer contains {old!r}"
        files[name] = solution.replace(old, new)

    tool, native, seconds = {}, {}, {}
    for name, text in files.items():
        folder = make_submission(tmp_path / name, {EX.filename: text})
        t0 = time.monotonic()
        out = _otter_run(zip_path, folder / EX.filename)
        seconds[name] = round(time.monotonic() - t0, 1)
        scored = [t for t in out["json"]["tests"] if "max_score" in t]
        tool[name] = (sum(t["score"] for t in scored), sum(t["max_score"] for t in scored))
        native[name] = gradings.score(folder, EX.id, secret)
    print("otter run seconds:", seconds, f"whole test {time.monotonic() - started:.0f} s")
    print("otter (score, max):", tool, "\nnative:", native)
    for name in files:
        score, max_score = tool[name]
        assert max_score == pytest.approx(EX.points)
        assert score / max_score == pytest.approx(native[name] / EX.points, abs=1e-4), name
    assert tool["solution"][0] == pytest.approx(EX.points) and tool["stub"][0] == 0
    assert all(0 < tool[name][0] < EX.points for name in BUGS)


def test_an_export_removes_the_exercises_it_no_longer_builds(tmp_path: Path):
    """A build for fewer exercises leaves no stale assignment of the others in dist/otter/ and
    dist/nbgrader/source/ (a folder that is not an export is left alone)."""
    from autograder.interop.nbgrader import export_nbgrader
    first, second = contract.DEFAULT[0], contract.DEFAULT[2]
    otter, nbgrader = tmp_path / "otter", tmp_path / "nbgrader"
    export_otter(otter, (first, second), generate=False)
    export_nbgrader(nbgrader, (first, second))
    (otter / "notes").mkdir()
    (nbgrader / "source" / "notes").mkdir()
    assert (otter / second.folder / "otter_config.json").is_file()
    assert (nbgrader / "source" / second.folder / second.notebook).is_file()
    export_otter(otter, (first,), generate=False)
    export_nbgrader(nbgrader, (first,))
    assert sorted(p.name for p in otter.iterdir()) == sorted([first.folder, "notes"])
    assert sorted(p.name for p in (nbgrader / "source").iterdir()) == sorted([first.folder, "notes"])
