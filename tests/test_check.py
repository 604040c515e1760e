"""`python -m autograder check`: students run the public tests inside the unzipped release.

The release ships a student-side runtime (``assignments/autograder/``). These tests run
``check`` in a fresh copy of the release, with the instructor's packages (``reference``,
``solutions``) made unimportable, and prove that the copy's runtime is the one that runs.
"""
from __future__ import annotations

import ast
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import check, contract
from autograder.packaging import release as rel
from autograder.packaging.release import student_runtime
from autograder import results
from mutants import mutant_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
MUTANTS = Path(__file__).resolve().parent / "submissions"

# Emulates `python -m autograder …` (the current folder first on sys.path) in a process where
# the instructor's packages cannot be imported, as on a student's laptop.
_RUN = r"""
import importlib.abc, runpy, sys
class _NoInstructorFiles(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("reference", "solutions", "tests"):
            raise ImportError(f"{name} is not available to students")
        return None
sys.meta_path.insert(0, _NoInstructorFiles())
sys.argv = ["autograder", *sys.argv[1:]]
runpy.run_module("autograder", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def release_copy(tmp_path_factory) -> Path:
    """A fresh student release, as a student unzips it."""
    out = tmp_path_factory.mktemp("student") / "release"
    rel.write_release(rel.build_release(ROOT), out)
    return out


def _copy(release_copy: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "release"
    shutil.copytree(release_copy, folder)
    return folder


def _check(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env["PYTHONNOUSERSITE"] = "1"
    return subprocess.run([sys.executable, "-c", _RUN, "check", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=240)


# ----------------------------------------------------------------------------- the runtime


def test_release_ships_a_self_contained_check_runtime(release_copy):
    runtime = release_copy / "autograder"
    shipped = {p.relative_to(runtime).as_posix() for p in runtime.rglob("*") if p.is_file()}
    assert {"__init__.py", "__main__.py", "cli.py", "check.py", "grading.py", "plugin.py",
            "intake/__init__.py", "intake/reading.py", "contract.py", "results.py", "sandbox/worker.py",
            "suites/checks.py",
            "suites/pytest.ini", "support/__init__.py", "diagnosis/__init__.py"} <= shipped
    for ex in contract.EXERCISES:
        assert f"suites/{ex.folder}/{student_runtime.REGISTRY_ROW}" in shipped   # its registry row: check finds it
        assert f"suites/{ex.folder}/{student_runtime.CAUSES}" in shipped         # the hints its public tests give
        if (ROOT / "autograder" / "suites" / ex.folder / "public").is_dir():
            assert f"suites/{ex.folder}/public/test_public.py" in shipped
    hidden = [p for p in shipped if p.startswith("suites/ex") and "/public/" not in p
              and Path(p).name not in (student_runtime.REGISTRY_ROW, student_runtime.CAUSES)]
    assert not hidden, f"hidden suite files shipped: {hidden}"
    assert not [p for p in shipped if p.startswith("packaging/")]
    graded = {name for ex in contract.EXERCISES for name in (ex.filename, ex.notebook)}
    assert not [p for p in shipped if Path(p).name in graded]
    assert (runtime / "cli.py").read_text() == student_runtime.CLI_SHIM
    # support/__init__ loads exactly the helper modules that are shipped
    init = (runtime / "support" / "__init__.py").read_text()
    helpers = sorted(p.removeprefix("support/").removesuffix(".py") for p in shipped
                     if p.startswith("support/") and p != "support/__init__.py")
    declared = next(line for line in init.splitlines() if line.startswith("__all__ = "))
    assert ast.literal_eval(declared.removeprefix("__all__ = ")) == helpers


def test_a_public_test_that_needs_the_reference_stops_the_release(tmp_path):
    kit = tmp_path / "autograder"
    shutil.copytree(ROOT / "autograder", kit, ignore=shutil.ignore_patterns("__pycache__"))
    (kit / "diagnosis" / "exz.py").write_text("import reference.attention as ref\n")
    public = kit / "suites" / "ex1_attention" / "public"
    public.mkdir(parents=True, exist_ok=True)
    (public / "test_z.py").write_text("from autograder.diagnosis import exz\n")
    with pytest.raises(student_runtime.StudentRuntimeError, match="diagnosis/exz.py imports the reference"):
        student_runtime.runtime_files(tmp_path, contract.EXERCISES[:1])


def test_no_runtime_without_a_kit(tmp_path):
    assert not student_runtime.available(tmp_path)
    from autograder.packaging.release.steps import ShipCheckRuntime
    assert ShipCheckRuntime().finish(tmp_path, []) == ({}, set())


# ----------------------------------------------------------------------------- students


@pytest.mark.slow
def test_check_on_the_stubs_explains_not_implemented(release_copy, tmp_path):
    folder = _copy(release_copy, tmp_path)
    done = _check(folder, "-v")
    out = done.stdout
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"kit runtime: {folder / 'autograder'}" in out          # the shipped copy, not the repo's
    for ex in check.public_exercises():
        assert f"{ex.id} · {ex.title} — {ex.folder}/{ex.filename}" in out
        assert check.hidden_coverage(ex).split(";")[0][:40] in " ".join(out.split())
    assert "not implemented yet" in out
    assert re.search(r"Public tests: 0 of \d+ passed\.", out)
    _assert_honest_worth(out)
    assert out.count("Hidden tests also check:") == len(check.public_exercises())
    assert "isolation: your code ran in a separate worker process forked" in out
    assert not list(folder.rglob("results*.json"))


@pytest.mark.slow
def test_check_gives_full_public_marks_to_the_solutions(release_copy, tmp_path):
    folder = _copy(release_copy, tmp_path)
    for ex in contract.EXERCISES:
        shutil.copy(SOLUTIONS / ex.folder / ex.filename, folder / ex.folder / ex.filename)
    done = _check(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✗" not in done.stdout
    passed = re.search(r"Public tests: (\d+) of (\d+) passed\.", done.stdout)
    assert passed and passed[1] == passed[2] and int(passed[1]) > 0
    assert "/ 100 points" not in done.stdout               # no pretend grade
    _assert_honest_worth(done.stdout)
    # the isolation is said once, in the student's words; the staff's warnings about grading
    # untrusted submissions at the process level are not for a student checking their own code
    assert "Isolation: " in done.stdout
    assert "WARNING" not in done.stderr and "isolation: process" not in done.stderr, done.stderr[-2000:]


@pytest.mark.slow
def test_check_one_exercise_with_a_mistake(release_copy, tmp_path):
    folder = _copy(release_copy, tmp_path)
    mutant = MUTANTS / "ex1" / "mutants" / "np_no_sqrt_scaling.diff"
    (folder / "ex1_attention" / "attention.py").write_text(mutant_source(mutant))
    done = _check(folder, "ex1")
    assert done.returncode == 1
    assert "ex1 · " in done.stdout and "ex2 · " not in done.stdout
    assert "✓" in done.stdout and "✗" in done.stdout


def test_check_in_a_folder_without_exercises(tmp_path):
    out = io.StringIO()
    assert check.run_check(tmp_path, [], out=out) == 2
    assert "Run this command in the folder you unzipped" in out.getvalue()


def test_unknown_exercise_is_a_usage_error(tmp_path):
    out = io.StringIO()
    assert check.run_check(tmp_path, ["ex9"], out=out) == 2
    assert "unknown exercise 'ex9'" in out.getvalue()


def test_a_timeout_that_is_not_a_positive_number_is_refused_in_a_sentence(release_copy):
    """``check --timeout`` in the student release (whose ``cli`` is only ``check``'s shim), as
    ``grade --timeout`` in the kit: exit code 2 and a sentence, nothing checked."""
    for value in ("0", "-1", "nan", "inf", "soon"):
        done = _check(release_copy, "--timeout", value, "ex1")
        assert done.returncode == 2, (value, done.stdout[-500:], done.stderr[-1500:])
        assert "expected a positive number of seconds" in done.stderr and "Traceback" not in done.stderr


def test_exercise_names_are_forgiving():
    assert [ex.id for ex in check.select_public(["1", "ex3_multihead", "causal.py,ex1"])] == ["ex1", "ex3", "ex4"]


def test_check_never_needs_root_or_a_worker_user(tmp_path, monkeypatch):
    """The non-root code path: no user is created, no namespace entered, even when run as root."""
    from autograder.sandbox import mounts, users

    def refuse(*_a, **_k):
        raise AssertionError("check must not create users or enter namespaces")

    monkeypatch.setattr(users, "ensure_user", refuse)
    monkeypatch.setattr(mounts, "unshare", refuse)
    folder = tmp_path / "mine" / "ex4_causal_mask"
    folder.mkdir(parents=True)
    shutil.copy(SOLUTIONS / "ex4_causal_mask" / "causal.py", folder / "causal.py")
    out = io.StringIO()
    code = check.run_check(folder.parent, ["ex4"], out=out)
    assert code == 0, out.getvalue()
    assert "ex4 · Causal masking and generation — ex4_causal_mask/causal.py" in out.getvalue()


def test_in_process_check_says_it_has_no_time_limits(tmp_path):
    """The in-process path (tests, benchmarks only: every platform now gets a worker)."""
    folder = tmp_path / "mine" / "ex1_attention"
    folder.mkdir(parents=True)
    shutil.copy(SOLUTIONS / "ex1_attention" / "attention.py", folder / "attention.py")
    out = io.StringIO()
    assert check.run_check(folder.parent, ["ex1"], out=out, in_process=True, verbose=True) == 0, out.getvalue()
    assert "no time limits" in out.getvalue() and "ran inside this process" in out.getvalue()


def test_the_report_shows_the_likely_cause_and_load_errors():
    submission = type("S", (), {"found": {}})()
    outcome = results.Results(tests=[
        results.TestResult("ex1", "public: softmax rows", 10, 0.0, False,
                   "weights: values differ\nLikely cause: you forgot the 1/√d_k scaling", "visible"),
        results.TestResult("ex1", "masks", 10, 10.0, True, "", "visible"),
        results.TestResult("ex3", "split", 20, 0.0, False,
                   "multihead.py has a syntax error on line 1: invalid syntax", "visible"),
    ], exercises=[results.ExerciseOutcome("ex1", "graded"),
                  results.ExerciseOutcome("ex3", "syntax_error",
                                          "multihead.py has a syntax error on line 1: invalid syntax")])
    text = check.render(outcome, submission, [contract.BY_ID["ex1"], contract.BY_ID["ex3"]])
    assert "  ✗ softmax rows\n      weights: values differ\n      Likely cause: you forgot" in text
    assert "  ✓ masks" in text
    assert "  ! multihead.py has a syntax error on line 1" in text
    assert "ex3 · Multi-head attention — multihead.py not found" in text
    assert "Public tests: 1 of 3 passed." in text
    assert "points" not in text                      # no weights known: no numbers claimed


def test_the_report_says_what_public_tests_are_worth():
    """Public weights 5 of 40 in a 20-point exercise: 20 × 5/40 = 2.5 points, 17.5 hidden."""
    submission = type("S", (), {"found": {}})()
    ex1, ex5 = contract.BY_ID["ex1"], contract.BY_ID["ex5"]
    outcome = results.Results(tests=[
        results.TestResult("ex1", "a", 10, 10.0, True, "", "visible"),
        results.TestResult("ex5", "b", 20, 0.0, False, "wrong", "visible")])
    text = check.render(outcome, submission, [ex1, ex5], worth={"ex1": (5.0, 40.0), "ex5": (2.0, 20.0)},
                        isolation="a test isolation")
    assert (f"  public tests: 1 of 1 passed (worth 2.5 of ex1's {ex1.points:g} points; "
            "the hidden tests decide the other 17.5)") in text
    assert "  public tests: 0 of 1 passed (worth 2 of ex5's 20 points; the hidden tests decide the other 18)" in text
    assert "They are worth 4.5 of the 40 points of the real grade; the hidden tests decide the other 35.5." in text
    assert text.endswith("Isolation: a test isolation.")


def _assert_honest_worth(out: str) -> None:
    """Each exercise's public share plus the hidden rest is its total; the overall line adds up."""
    shares: list[float] = []
    found = re.findall(r"\(worth ([\d.]+) of (ex\d)'s ([\d.]+) points; the hidden tests decide the other ([\d.]+)\)", out)
    assert len(found) == len(check.public_exercises()), out
    for share, ex_id, total, rest in found:
        assert float(total) == contract.BY_ID[ex_id].points
        assert 0 < float(share) < float(total) and abs(float(share) + float(rest) - float(total)) < 1e-9
        shares.append(float(share))
    overall = re.search(r"They are worth ([\d.]+) of the ([\d.]+) points of the real grade; the hidden "
                        r"tests decide the other ([\d.]+)\.", " ".join(out.split()))
    assert overall, out
    assert abs(float(overall[1]) - sum(shares)) < 0.011
    assert abs(float(overall[1]) + float(overall[3]) - float(overall[2])) < 1e-9


# ----------------------------------------------------------------------------- from anywhere, with pytest

# `python check.py …` (a launcher in the release) in a process where the instructor's
# packages cannot be imported.
_RUN_SCRIPT = _RUN.replace('sys.argv = ["autograder", *sys.argv[1:]]\nrunpy.run_module("autograder", run_name="__main__", alter_sys=True)',
                           'script = sys.argv[1]\nsys.argv = sys.argv[1:]\nrunpy.run_path(script, run_name="__main__")')


def _launch(cwd: Path, script: str, *args: str, module: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env["PYTHONNOUSERSITE"] = "1"
    command = [sys.executable, "-m", "pytest", *args] if module else [sys.executable, "-c", _RUN_SCRIPT, script, *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_launcher_and_conftest_are_generated_in_the_release(release_copy):
    assert (release_copy / "check.py").is_file() and (release_copy / "conftest.py").is_file()
    assert "testpaths" in (release_copy / "pytest.ini").read_text()
    for ex in check.public_exercises():
        launcher = (release_copy / ex.folder / "check.py").read_text()
        assert f"EXERCISE = {ex.id!r}" in launcher
        header = (release_copy / ex.folder / "tests" / "test_public.py").read_text().splitlines()[0]
        assert header.startswith(f"# Public tests of {ex.id}")


@pytest.mark.slow
def test_check_from_inside_an_exercise_folder(release_copy, tmp_path):
    """A student in ex1_attention/ runs `python check.py` (that exercise), and from tests/
    `python ../check.py all` (every exercise); the release's own runtime runs."""
    folder = _copy(release_copy, tmp_path)
    shutil.copy(SOLUTIONS / "ex1_attention" / "attention.py", folder / "ex1_attention" / "attention.py")
    done = _launch(folder / "ex1_attention", "check.py", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"kit runtime: {folder / 'autograder'}" in done.stdout
    assert "ex1 · " in done.stdout and "ex2 · " not in done.stdout
    assert re.search(r"public tests: (\d+) of \1 passed", done.stdout)
    done = _launch(folder / "ex1_attention" / "tests", "../check.py", "all")
    assert done.returncode == 1                        # the other exercises are stubs
    for ex in check.public_exercises():
        assert f"{ex.id} · " in done.stdout
    assert "ex1 · " in done.stdout and "not implemented yet" in done.stdout


def _failed_titles_from_check(out: str) -> set[str]:
    return {line.strip().removeprefix("✗ ") for line in out.splitlines() if line.strip().startswith("✗ ")}


def _pytest_failed_titles(out: str, test_file: Path) -> set[str]:
    """The first docstring lines of the tests pytest reports as FAILED (what `check` prints)."""
    import ast
    docs = {node.name: (ast.get_docstring(node) or "").splitlines()[0].rstrip(".")
            for node in ast.parse(test_file.read_text()).body if isinstance(node, ast.FunctionDef)}
    return {docs[name] for name in re.findall(r"^FAILED \S+::(\w+)", out, flags=re.M)}


@pytest.mark.slow
def test_pytest_in_the_release_gives_the_same_verdicts_as_check(release_copy, tmp_path):
    folder = _copy(release_copy, tmp_path)
    for ex in contract.EXERCISES:
        shutil.copy(SOLUTIONS / ex.folder / ex.filename, folder / ex.folder / ex.filename)
    # --strict-markers: every marker the public tests carry is registered (an unknown one once
    # warned per test, and failed every test under -W error or --strict-markers: blind student)
    done = _launch(folder, "", "-q", "-p", "no:randomly", "--strict-markers", module=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PytestUnknownMarkWarning" not in done.stdout + done.stderr, done.stdout
    total = sum(len(re.findall(r"^def test_", (folder / ex.folder / "tests" / "test_public.py").read_text(), re.M))
                for ex in check.public_exercises())
    assert re.search(rf"\b{total} passed\b", done.stdout), done.stdout
    # one bug: the same tests fail under pytest (run in the exercise folder) and under check
    mutant = MUTANTS / "ex1" / "mutants" / "np_no_sqrt_scaling.diff"
    (folder / "ex1_attention" / "attention.py").write_text(mutant_source(mutant))
    by_pytest = _launch(folder / "ex1_attention", "", "-q", "-rf", "-p", "no:randomly", module=True)
    by_check = _check(folder, "ex1")
    assert by_pytest.returncode == 1 and by_check.returncode == 1
    failed = _pytest_failed_titles(by_pytest.stdout, folder / "ex1_attention" / "tests" / "test_public.py")
    assert failed and failed == _failed_titles_from_check(by_check.stdout), (by_pytest.stdout, by_check.stdout)
