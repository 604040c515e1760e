"""`python -m autograder build`: the Gradescope zip, verified the way Gradescope runs it.

The zip is built into a temporary folder from a scratch root (the repository's solutions,
kit and reference, with a freshly generated release), so the test does not depend on
``assignments/`` or ``dist/`` being up to date. As root, the zip then runs in a private mount
namespace with a fresh tmpfs on ``/autograder`` (``source/`` = the unpacked zip,
``run_autograder`` copied beside it, a submission, ``results/``), with the repository's own
``autograder/`` and ``reference/`` covered by empty mounts: only the zip's copy of the kit can
be imported, and ``run_autograder`` reports which copy ran and its build id.
"""
from __future__ import annotations

import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import contract
from autograder.packaging.exports import gradescope
from autograder.packaging.verify import simulate
from autograder.packaging.release.entrypoints import public_test_header
from autograder.packaging.build import EXPORTS, BuildContext, build, parse_points
from autograder.packaging.release.markers import find_regions, significant, strip_solutions
from autograder.packaging.release import build_release, student_runtime, write_release
from autograder.packaging.release.leaks import scannable_text
from autograder.results import validate

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "autograder" / "suites"
HIDE = [ROOT / "autograder", ROOT / "reference"]
CAN_SIMULATE, WHY_NOT = simulate.can_simulate()
needs_namespace = pytest.mark.skipif(not CAN_SIMULATE, reason=f"simulated Gradescope run: {WHY_NOT}")
# Imported by torch when present, never needed (torch.hub's progress bar, datapipes' pickling).
TORCH_OPTIONAL = {"tqdm", "dill"}
# (IPython is graded with: notebook submissions are read with its input transformations.)
NOT_GRADING = ("nbgrader", "otter-grader", "nbformat", "nbconvert", "jupyter", "notebook",
               "jupyterlab", "ipykernel", "tqdm", "playwright", "pandas")

HOSTILE_ATTENTION = '''
import json, os
fake = {"score": 1000.0, "output": "PWNED", "tests": [
    {"name": "ex1 · pwned", "score": 1000.0, "max_score": 1.0, "status": "passed"}]}
for path in ("/autograder/results/results.json", "/autograder/results/../results/results.json"):
    try:
        with open(path, "w") as handle:
            json.dump(fake, handle)
    except OSError:
        pass
try:
    with open("/autograder/run_autograder", "a") as handle:
        handle.write("\\necho PWNED\\n")
except OSError:
    pass
os._exit(0)
'''


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def scratch_root(tmp_path_factory) -> Path:
    """A root like the repository's, with ``assignments/`` freshly generated."""
    root = tmp_path_factory.mktemp("root")
    for name in ("autograder", "reference", "solutions", "pyproject.toml"):   # the wheel reads pyproject
        (root / name).symlink_to(ROOT / name)
    return root


SEED_SECRET = "5eed" * 16          # pinned: builds are byte-identical (unpinned, SEED_SECRET differs)
ZIPS = ("release", "gradescope")     # the exports these tests read; the others cost ~20 s a build


def _build(root: Path, out: Path, exercises: str | None = None, points: str | None = None,
           only: tuple[str, ...] | None = ZIPS) -> BuildContext:
    write_release(build_release(ROOT), root / "assignments")     # current, even if the tree moved
    return build(BuildContext(root=root, out=out, exercises=contract.select(exercises),
                              points=parse_points(points), say=lambda _msg: None,
                              seed_secret=SEED_SECRET), only=only)


@pytest.fixture(scope="module")
def dist(scratch_root, tmp_path_factory) -> Path:
    """Every export step, once, as ``python -m autograder build`` runs them."""
    out = tmp_path_factory.mktemp("dist")
    ctx = _build(scratch_root, out, only=None)
    assert set(ctx.artifacts) == {step.name for step in EXPORTS}
    return out


@pytest.fixture(scope="module")
def unpacked(dist, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("unpacked")
    simulate.unpack(dist / "autograder.zip", target)
    return target


def _info(zip_path: Path) -> dict:
    with zipfile.ZipFile(zip_path) as archive:
        return json.loads(archive.read("autograder/BUILD_INFO.json"))


def _check_run(run: simulate.SimulatedRun, zip_path: Path) -> dict:
    """The run wrote a valid results.json, with the zip's own copy of the kit."""
    assert run.results is not None, run.stdout[-3000:]
    validate(run.results)
    assert run.status == 0, run.stdout[-3000:]
    assert run.kit_path == "/autograder/source/autograder", run.stdout[-2000:]
    assert run.build_id == _info(zip_path)["build_id"], run.stdout[-2000:]
    assert abs(run.results["score"] - sum(t["score"] for t in run.results["tests"])) < 1e-6
    return run.results


# --------------------------------------------------------------------------- the zip itself


def test_zip_layout(dist):
    with zipfile.ZipFile(dist / "autograder.zip") as archive:
        infos = {i.filename: i for i in archive.infolist()}
    names = set(infos)
    for name in ("setup.sh", "run_autograder", "requirements.txt", "autograder/__main__.py",
                 "autograder/BUILD_INFO.json", "autograder/SEED_SECRET", "autograder/suites/pytest.ini",
                 "reference/__init__.py"):
        assert name in names, name
    for script in ("setup.sh", "run_autograder"):
        assert (infos[script].external_attr >> 16) & 0o777 == 0o755
    for ex in contract.DEFAULT:                         # no --exercises: the default assignment
        assert any(n.startswith(f"autograder/suites/{ex.folder}/test_") for n in names), ex.id
    for ex in set(contract.EXERCISES) - set(contract.DEFAULT):     # opt-in exercises stay out
        assert not any(n.startswith(f"autograder/suites/{ex.folder}/") for n in names), ex.id
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyo"))]
    assert not [n for n in names if n.split("/")[0] in ("solutions", "tests", "assignments", "dist", ".git")]
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in infos.values())
    assert list(infos) == sorted(infos)
    info = _info(dist / "autograder.zip")
    assert info["exercises"] == [ex.id for ex in contract.DEFAULT]
    assert info["points"] == {ex.id: ex.points for ex in contract.DEFAULT}


def test_build_is_deterministic(scratch_root, dist, tmp_path):
    _build(scratch_root, tmp_path)
    for name in ("autograder.zip", "release.zip"):
        assert (tmp_path / name).read_bytes() == (dist / name).read_bytes(), name


def test_release_zip_ships_the_runtime_of_this_kit(tmp_path):
    """The check runtime is not kept in git (a fresh clone has no assignments/autograder/):
    every build generates it from the kit."""
    root = tmp_path / "root"
    root.mkdir()
    for name in ("autograder", "reference", "solutions", "pyproject.toml"):   # the wheel reads pyproject
        (root / name).symlink_to(ROOT / name)
    release = build_release(ROOT)
    write_release(release, root / "assignments")
    shutil.rmtree(root / "assignments" / "autograder")                # as in a fresh clone
    build(BuildContext(root=root, out=tmp_path / "dist", exercises=contract.EXERCISES,
                       say=lambda _msg: None), only=["release"])
    with zipfile.ZipFile(tmp_path / "dist" / "release.zip") as archive:
        shipped = {n.removeprefix("assignments/"): archive.read(n) for n in archive.namelist()
                   if n.startswith("assignments/autograder/")}
    wanted = {p: d for p, d in release.encoded().items() if p.startswith("autograder/")}
    assert wanted and shipped == wanted


def test_scripts(unpacked):
    for script in ("setup.sh", "run_autograder"):
        subprocess.run(["bash", "-n", str(unpacked / script)], check=True)
        assert os.access(unpacked / script, os.X_OK)
    setup = (unpacked / "setup.sh").read_text()
    assert "set -euo pipefail" in setup
    assert "--index-url \"${TORCH_INDEX}\"" in setup and 'TORCH_INDEX="https://download.pytorch.org/whl/cpu"' in setup
    assert f'VENV="{gradescope.VENV}"' in setup and not gradescope.VENV.startswith("/autograder")
    commands = "\n".join(ln for ln in setup.lower().splitlines() if not ln.lstrip().startswith("#"))
    for unwanted in ("conda", "texlive", "chromium", "playwright", "nbgrader", "otter", "jupyter"):
        assert unwanted not in commands, unwanted
    run = (unpacked / "run_autograder").read_text()
    assert ('cd "${SOURCE}"' in run and "SOURCE=/autograder/source" in run)
    assert ('"${PY}" -m autograder grade "${SUBMISSION}" --results "${RESULTS}" --exercises "${EXERCISES}"'
            in run)
    assert 'EXERCISES="ex1,ex2,ex3,ex4,ex5"' in run
    assert 'EXERCISE_BUDGET="70"' in run and '--exercise-budget "${EXERCISE_BUDGET}"' in run
    assert f'PY="${{AUTOGRADER_PYTHON:-{gradescope.VENV}/bin/python}}"' in run


def test_pins_are_the_tested_versions(unpacked):
    lines = [ln for ln in (unpacked / "requirements.txt").read_text().splitlines()
             if ln and not ln.startswith("#")]
    pins = dict(ln.split("==") for ln in lines)
    for name, version in pins.items():
        assert md.version(name) == version, name
    canonical = {n.lower().replace("_", "-") for n in pins}
    assert {"numpy", "torch", "matplotlib", "pytest", "jsonschema", "ipython"} <= canonical
    assert not canonical & set(NOT_GRADING), canonical & set(NOT_GRADING)
    setup = (unpacked / "setup.sh").read_text()
    assert f'TORCH_VERSION="{md.version("torch")}"' in setup
    assert f'PYTHON_VERSION="{sys.version_info.major}.{sys.version_info.minor}"' in setup
    assert f'PIP_VERSION="{md.version("pip")}"' in setup
    from packaging.specifiers import SpecifierSet
    here = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    for name in pins:   # every pin installs on the Python setup.sh asks for
        requires = md.distribution(name).metadata.get("Requires-Python")
        assert not requires or here in SpecifierSet(requires), (name, requires)
    # The pins are complete and consistent: pip, offline, finds every one already satisfied.
    check = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "-q",
                            "-r", str(unpacked / "requirements.txt")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_grading_imports_only_the_pinned_packages(unpacked):
    """Importing the whole grading side pulls in no package outside requirements.txt."""
    pins = {ln.split("==")[0].lower().replace("-", "_")
            for ln in (unpacked / "requirements.txt").read_text().splitlines() if "==" in ln}
    probe = ("import sys, json, importlib.metadata as md\n"
             "import autograder.grading, autograder.plugin, autograder.results, autograder.suites.checks\n"
             "import autograder.support, autograder.diagnosis, reference\n"
             "import pkgutil\n"
             "for m in pkgutil.walk_packages(autograder.support.__path__, 'autograder.support.'):\n"
             "    __import__(m.name)\n"
             "dists = md.packages_distributions()\n"
             "used = sorted({d for m in list(sys.modules) for d in dists.get(m.split('.')[0], [])})\n"
             "print(json.dumps(used))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=unpacked, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    used = {d.lower().replace("-", "_") for d in json.loads(out.stdout.splitlines()[-1])}
    assert used - {"attention_autograder"} - TORCH_OPTIONAL <= pins, (used - pins)


@pytest.mark.parametrize("count", range(1, 9))
def test_every_exercise_spending_its_budget_still_fits_the_time_limit(count):
    """Each exercise may spend its budget plus its import's time limit; in a build of any size
    all of them together, with the start-up, stay within run_autograder's limit, so the last
    exercise is graded too (red team: ex6 opted in made 6 x 90 s = 540 s of a 480 s limit)."""
    from autograder.budget import DEFAULT_BUDGET_S
    from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT
    budget = gradescope.exercise_budget(count)
    assert 0 < budget <= DEFAULT_BUDGET_S
    assert count * (budget + DEFAULT_CALL_TIMEOUT) + gradescope.START_MARGIN_S <= gradescope.TIME_LIMIT_S
    assert count > 5 or budget == DEFAULT_BUDGET_S          # the default assignment keeps the default


def test_subset_build(scratch_root, tmp_path):
    ctx = _build(scratch_root, tmp_path, "ex1,ex3", "ex1=30")
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = archive.namelist()
        run = archive.read("run_autograder").decode()
    suites = {n.split("/")[2] for n in names if n.startswith("autograder/suites/") and n.count("/") > 2}
    assert suites == {"ex1_attention", "ex3_multihead"}
    assert 'EXERCISES="ex1,ex3"' in run
    assert _info(tmp_path / "autograder.zip")["points"] == {"ex1": 30.0, "ex3": 20.0}
    with zipfile.ZipFile(tmp_path / "release.zip") as archive:
        names = archive.namelist()
    folders = {n.split("/")[1] for n in names if n.count("/") > 1} - {"autograder"}
    assert folders == {"ex1_attention", "ex3_multihead"}
    others = [ex.folder for ex in contract.EXERCISES if ex.id not in ("ex1", "ex3")]
    assert not [n for n in names if any(f"/{folder}/" in n for folder in others)]
    assert ctx.artifacts["gradescope"] and ctx.artifacts["release"]
    with pytest.raises(gradescope.BuildError):
        _build(scratch_root, tmp_path / "bad", "ex1", "ex2=10")


# --------------------------------------------------------------------------- the student release


def _hidden_suite_files() -> list[Path]:
    """Everything in an exercise's suite folder except its public tests, its registry row
    (``exercise.py``: the check runtime's registry reads it), its causes (``causes.py``: the
    hints of its public tests) and caches."""
    shipped = (student_runtime.REGISTRY_ROW, student_runtime.CAUSES)
    return sorted(p for ex in contract.EXERCISES for p in (SUITES / ex.folder).rglob("*")
                  if p.is_file() and "public" not in p.relative_to(SUITES).parts
                  and p.name not in shipped and "__pycache__" not in p.parts)


def test_release_zip_holds_no_hidden_tests_reference_or_solutions(dist):
    """``release.zip``: no hidden suite file, no reference code, no solution code.

    Shared suite infrastructure (``suites/checks.py``, ``suites/pytest.ini``) and the
    student-side ``check`` runtime may ship; hidden tests are the files of
    ``autograder/suites/<exercise>/`` outside ``public/``.
    """
    with zipfile.ZipFile(dist / "release.zip") as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    assert files and all(n.startswith("assignments/") for n in files)
    public = {p.read_bytes() for p in SUITES.glob("*/public/*.py")}
    hidden = _hidden_suite_files()
    reference = sorted((ROOT / "reference").rglob("*.py"))
    whole = {p.read_bytes(): p for p in hidden + reference if len(p.read_bytes().strip()) > 40}
    hidden_names = {p.relative_to(ROOT).as_posix() for p in hidden}
    for name, data in files.items():
        rel = name.removeprefix("assignments/")
        assert data not in whole, f"{name} is {whole.get(data)}"
        assert rel not in hidden_names and not rel.startswith(("reference/", "solutions/")), name
        if Path(name).name.startswith("test_") and name.endswith(".py"):
            # an exercise folder's tests/test_public.py: the release's header, then a public suite
            ex = next((e for e in contract.EXERCISES if rel.startswith(e.folder + "/")), None)
            header = public_test_header(ex).encode() if ex else b""
            assert data.startswith(header) and data[len(header):] in public, \
                f"{name} is not one of the public suites"
    # Line by line: no significant line of the reference, a hidden suite or a solution region,
    # unless the release's own inputs legitimately hold it outside any secret.
    secrets: dict[str, str] = {}
    allowed: set[str] = set()
    for path in sorted((ROOT / "solutions").glob("*/*.py")):
        stripped = strip_solutions(path.read_text(), str(path))
        allowed |= stripped.kept_lines
        for line in stripped.secret_lines:
            secrets.setdefault(line, f"a solution region of {path.relative_to(ROOT)}")
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            lines = src.splitlines()
            inside = {i for b, e, _ in find_regions(src, path.name) for i in range(b, e + 1)}
            if not inside and (cell.get("metadata", {}).get("nbgrader") or {}).get("solution"):
                inside = set(range(1, len(lines) + 1))        # nbgrader replaces the whole cell
            for i, line in enumerate(lines, start=1):
                if i in inside:
                    secrets.setdefault(line.strip(), f"a solution region of {path.name}")
                else:
                    allowed.add(line.strip())
    secret_files = set(hidden) | {p for p in (ROOT / "autograder" / "diagnosis").glob("ex*.py")}
    shareable = [p for p in (ROOT / "autograder").rglob("*.py")
                 if p not in secret_files and "__pycache__" not in p.parts]
    for path in (sorted((ROOT / "solutions").glob("*/README.md")) + sorted(SUITES.glob("*/public/*.py"))
                 + sorted(shareable)):
        allowed |= {ln.strip() for ln in path.read_text().splitlines()}
    for path in hidden + reference:
        if path.suffix == ".py":
            for line in path.read_text().splitlines():
                secrets.setdefault(line.strip(), str(path.relative_to(ROOT)))
    leaks = []
    for name, data in files.items():
        text = scannable_text(name, data.decode("utf-8"))
        for line in text.splitlines():
            line = line.strip()
            if significant(line) and line in secrets and line not in allowed:
                leaks.append(f"{name}: {line!r} (from {secrets[line]})")
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, name
    assert not leaks, "\n".join(leaks[:20])


# --------------------------------------------------------------------------- as Gradescope runs it


@needs_namespace
def test_solutions_get_full_marks_from_the_zips_own_kit(dist, tmp_path):
    folder = tmp_path / "solutions"
    folder.mkdir()
    for ex in contract.DEFAULT:                         # the dist zip: the default assignment
        shutil.copy(ROOT / "solutions" / ex.folder / ex.filename, folder / ex.filename)
    zip_path = dist / "autograder.zip"
    run = simulate.simulate_gradescope(zip_path, folder, hide=HIDE)
    results = _check_run(run, zip_path)
    max_total = sum(ex.points for ex in contract.DEFAULT)
    failed = [f'{t["name"]}: {t["output"][:300]}' for t in results["tests"] if t["status"] != "passed"]
    assert results["score"] == pytest.approx(max_total), failed
    assert {t["tags"][0] for t in results["tests"]} == {ex.id for ex in contract.DEFAULT}


@needs_namespace
def test_stubs_get_zero(dist, scratch_root, tmp_path):
    folder = tmp_path / "stubs"
    folder.mkdir()
    for ex in contract.EXERCISES:
        shutil.copy(scratch_root / "assignments" / ex.folder / ex.filename, folder / ex.filename)
    zip_path = dist / "autograder.zip"
    results = _check_run(simulate.simulate_gradescope(zip_path, folder, hide=HIDE), zip_path)
    assert results["score"] == 0
    assert results["tests"] and all(t["score"] == 0 for t in results["tests"])


@needs_namespace
def test_hostile_submission_cannot_forge_results(dist, tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "attention.py").write_text(HOSTILE_ATTENTION)
    zip_path = dist / "autograder.zip"
    run = simulate.simulate_gradescope(zip_path, folder, hide=HIDE)
    results = _check_run(run, zip_path)
    ex1 = [t for t in results["tests"] if t["tags"] == ["ex1"]]
    assert ex1 and all(t["score"] == 0 for t in ex1)
    assert results["score"] < 1, results["score"]       # the other four files are missing
    assert "PWNED" not in json.dumps(results) and "PWNED" not in run.stdout


@needs_namespace
def test_subset_with_points_override_runs_as_built(scratch_root, tmp_path):
    _build(scratch_root, tmp_path / "dist", "ex1,ex3", "ex1=30")
    zip_path = tmp_path / "dist" / "autograder.zip"
    folder = tmp_path / "sub"
    folder.mkdir()
    for ex in contract.select("ex1,ex3"):
        shutil.copy(ROOT / "solutions" / ex.folder / ex.filename, folder / ex.filename)
    run = simulate.simulate_gradescope(zip_path, folder, hide=HIDE)
    _check_run(run, zip_path)
    assert run.by_exercise() == {"ex1": (30.0, 30.0), "ex3": (20.0, 20.0)}


def _fake_python(tmp_path: Path, body: str) -> str:
    fake = tmp_path / "fake-python"
    fake.write_text("#!/usr/bin/env bash\n"
                    'if [ "${1:-}" = "-m" ]; then\n' + body + "\nfi\n"
                    f'exec {sys.executable} "$@"\n')
    fake.chmod(0o755)
    return str(fake)


@needs_namespace
@pytest.mark.parametrize("case, body, env, words", [
    ("dies", "exit 3", {}, "exit status 3"),
    ("garbage", 'printf \'{"score": ' "' > /autograder/results/results.json; exit 0", {}, "without writing"),
    ("placeholder", 'printf \'{"score": 0, "tests": []}\' > /autograder/results/results.json; kill -9 $$',
     {}, "was killed"),
    ("hangs", "sleep 60", {"AUTOGRADER_TIME_LIMIT": "1"}, "time limit (1 s)"),
])
def test_run_autograder_always_leaves_a_valid_results_json(dist, tmp_path, case, body, env, words):
    folder = tmp_path / "submission"
    folder.mkdir()
    run = simulate.simulate_gradescope(dist / "autograder.zip", folder, python=_fake_python(tmp_path, body),
                                         hide=HIDE, env=env, timeout=60)
    assert run.results is not None, run.stdout
    validate(run.results)
    assert run.results["score"] == 0 and run.results["tests"] == []
    assert words in run.results["output"], run.results["output"]


def test_without_root_the_unpacked_zip_still_grades_with_its_own_kit(dist, tmp_path):
    """The fallback of `build --self-grade` (no root): `grade` run from the unpacked zip.

    Even with this repository installed in editable mode, `python -m autograder` from the
    unpacked folder imports the unpacked copy (the current folder is first on sys.path).
    """
    folder = tmp_path / "sub"
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / "ex1_attention" / "attention.py", folder / "attention.py")
    run = simulate.grade_directly(dist / "autograder.zip", folder, exercises="ex1")
    assert run.results is not None, run.stdout[-3000:]
    validate(run.results)
    assert run.kit_path and run.kit_path != str(ROOT / "autograder")
    assert run.kit_path.endswith("/source/autograder") and run.build_id == _info(dist / "autograder.zip")["build_id"]
    assert run.by_exercise() == {"ex1": (20.0, 20.0)}
