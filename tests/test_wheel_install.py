"""The kit installs as a package and grades from there: the wheel `build` writes, and `pip install .`.

Each install goes into a fresh virtual environment in /tmp, outside the checkout. Third-party
packages (torch, numpy, pytest …) come from this test's own venv through a ``.pth`` line
appended to the new venv's site-packages, which is cheap and cannot bring the kit along: the
checkout's editable install is an import hook that only a ``.pth`` file *in a site folder*
runs, and the appended folder is not one. Every run checks where ``autograder`` was imported
from, then grades the solutions (full marks) and the stubs (zero) from a neutral folder.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder import contract
from autograder.packaging.build import BuildContext, build

ROOT = Path(__file__).resolve().parents[1]
FULL = sum(ex.points for ex in contract.DEFAULT)        # `grade` without --exercises
pytestmark = pytest.mark.slow


def _package_data_patterns() -> list[str]:
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["tool"]["setuptools"]["package-data"]["autograder"]


def test_package_data_covers_every_file_the_kit_reads():
    """Every non-Python file under autograder/ is package data (pytest.ini was not: exit code 4)."""
    patterns = _package_data_patterns()
    missed = []
    for path in (ROOT / "autograder").rglob("*"):
        rel = path.relative_to(ROOT / "autograder").as_posix()
        if path.is_dir() or path.suffix in (".py", ".pyc") or "__pycache__" in rel:
            continue
        if rel == "SEED_SECRET":            # a checkout's own secret (git-ignored); a build writes its own
            continue
        if not any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.removeprefix("**/")) for p in patterns):
            missed.append(rel)
    assert not missed, f"not package data in pyproject.toml: {missed}"


@pytest.fixture(scope="module")
def scratch():
    """A folder in /tmp every user may traverse (the worker user reads the venv's site-packages)."""
    path = Path(tempfile.mkdtemp(prefix="ag-wheel-test-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _fresh_venv(where: Path) -> Path:
    """A venv without pip whose site-packages also sees this venv's third-party packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "zz_third_party.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def _pip_into(python: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", *args], check=True, timeout=600)


def _grade(python: Path, submission: Path, work: Path) -> dict:
    """``python -m autograder grade`` from a neutral folder, with nothing of the checkout around."""
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "AUTOGRADER"))}
    env["PYTHONHASHSEED"] = "0"
    located = subprocess.run([str(python), "-c", "import autograder; print(autograder.__file__)"],
                             cwd=work, env=env, capture_output=True, text=True, check=True)
    assert located.stdout.strip().startswith(str(python.parent.parent)), located.stdout
    proc = subprocess.run([str(python), "-m", "autograder", "grade", str(submission),
                           "--results", str(work / "results.json")],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads((work / "results.json").read_text())


@pytest.fixture(scope="module")
def wheel(scratch) -> Path:
    ctx = build(BuildContext(root=ROOT, out=scratch / "dist", exercises=contract.EXERCISES,
                             say=lambda _msg: None), only=["gradescope", "wheel"])
    return ctx.artifacts["wheel"][0]


def test_wheel_shares_the_zips_build(wheel):
    assert wheel.name == f"attention_autograder-{__import__('autograder').__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as whl, zipfile.ZipFile(wheel.parent / "autograder.zip") as gs:
        names = set(whl.namelist())
        assert "autograder/suites/pytest.ini" in names and "reference/attention.py" in names
        assert json.loads(whl.read("autograder/BUILD_INFO.json"))["build_id"] == \
            json.loads(gs.read("autograder/BUILD_INFO.json"))["build_id"]
        kit = {n for n in gs.namelist() if n.startswith(("autograder/", "reference/"))}
        assert kit == {n for n in names if ".dist-info/" not in n}
        assert all(whl.read(n) == gs.read(n) for n in kit)


def test_wheel_installs_and_grades(wheel, scratch):
    python = _fresh_venv(scratch / "venv-wheel")
    _pip_into(python, str(wheel))
    assert (python.parent / "attention-autograder").is_file()          # the console script
    solved = _grade(python, ROOT / "solutions", scratch / "work-wheel-solutions")
    assert solved["score"] == FULL, solved["output"]
    assert solved["extra_data"]["isolation"] in ("namespaces", "user", "process")
    stubs = _grade(python, ROOT / "assignments", scratch / "work-wheel-stubs")
    assert stubs["score"] == 0, stubs["output"]


def test_pip_install_dot_grades(scratch):
    """``pip install .`` (not editable) from a copy of the checkout's sources."""
    source = scratch / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "BUILD_INFO.json")
    for name in ("autograder", "reference"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    python = _fresh_venv(scratch / "venv-dot")
    _pip_into(python, "--no-build-isolation", str(source))
    solved = _grade(python, ROOT / "solutions", scratch / "work-dot-solutions")
    assert solved["score"] == FULL, solved["output"]
