"""Hostile input, round 2, graded through the real CLI.

* intake: links (to the reference, to hidden tests, to /etc/shadow, /proc/self/environ, to
  folders), hard links, zip bombs spread over ten zips, a BOM, malformed notebooks;
* the grader's working folder: modules planted there never run;
* the wire: a submission that writes raw frames to the worker's socket costs only that call;
* support code and banned APIs at run time.

Each run must end with a schema-valid results.json, with no secret, hidden-test line or
kit path in it. Corpus files: ``tests/hostile_input/`` (see its README).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import contract, results
from helpers import kit_modes_restored, worker_user
from hostile_cases import PYTHON, ROOT, render, secret_lines
from outside_python import outside_python

CORPUS = Path(__file__).resolve().parent / "hostile_input"
IS_ROOT = os.geteuid() == 0
WORKER_USER = worker_user("intake")
RUN_BUDGET_S = 240
SUITES = ROOT / "autograder" / "suites"
LEVELS = [pytest.param("auto", id="strongest"),
          pytest.param("user", id="user-level", marks=pytest.mark.skipif(
              not IS_ROOT, reason="the user level needs root (a worker user)"))]


@dataclass
class Run:
    data: dict
    text: str
    stdout: str
    stderr: str
    returncode: int
    peak_rss_mb: float            # largest RSS of the grader or any process it started

    def tests(self, ex: str) -> list[dict]:
        return [t for t in self.data["tests"] if results.exercise_of_result(t) == ex]

    def score(self, ex: str) -> float:
        return round(sum(float(t["score"]) for t in self.tests(ex)), 4)     # 4-decimal scores

    def max_score(self, ex: str) -> float:
        return round(sum(float(t["max_score"]) for t in self.tests(ex)), 4)

    def outputs(self, ex: str) -> str:
        return "\n".join(str(t.get("output", "")) for t in self.tests(ex))


# Runs the grader as its only child: RUSAGE_CHILDREN's peak is then this run's alone.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(code)\n")


@pytest.fixture
def proof(monkeypatch):
    """A folder the worker can write to and the test can read (the worker's /tmp is private;
    its own root at the namespaces level shows this folder only through AUTOGRADER_SANDBOX_SHARE)."""
    folder = Path(f"/var/tmp/ag-intake-proof-{uuid.uuid4().hex[:10]}")
    folder.mkdir(mode=0o1777)
    folder.chmod(0o1777)
    monkeypatch.setenv("AUTOGRADER_SANDBOX_SHARE", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def solution(ex_id: str) -> str:
    ex = contract.BY_ID[ex_id]
    return (ROOT / "solutions" / ex.folder / ex.filename).read_text()


def corpus_file(case: str, name: str, **values: str) -> str:
    text = render((CORPUS / case / name).read_text(), "intake", "unused")
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def grade(submission: Path, exercises: str, out: Path, *, cwd: Path = ROOT,
          env_extra: dict | None = None, timeout: float = 3.0, level: str = "auto") -> Run:
    """Grade through the CLI; ``level="user"`` runs the user isolation level with a Python
    outside /root (as on Gradescope), restoring the kit folders' modes afterwards."""
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    python = PYTHON
    if level == "user":
        assert IS_ROOT, "the user level needs root"
        python = str(outside_python())
    cmd = [python, "-m", "autograder", "grade", str(submission), "--exercises", exercises,
           "--results", str(results_path), "--timeout", str(timeout), "--worker-user", WORKER_USER,
           "--isolation", level]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", **(env_extra or {}))
    rss_file = out / "peak-rss-kb"
    with kit_modes_restored():
        proc = subprocess.run([PYTHON, "-c", _MEASURE, str(rss_file), *cmd], cwd=cwd, env=env,
                              capture_output=True, timeout=RUN_BUDGET_S)
    peak = int(rss_file.read_text()) if rss_file.exists() else 0
    assert results_path.exists(), f"no results.json: {proc.stderr[-3000:]!r}"
    text = results_path.read_text()
    run = Run(json.loads(text), text, proc.stdout.decode(errors="replace"),
              proc.stderr.decode(errors="replace"), proc.returncode,
              peak / 1024)
    results.validate(run.data)
    assert proc.returncode == 0, f"the CLI failed ({proc.returncode}): {run.stderr[-3000:]}"
    assert run.data["tests"], run.data.get("output", "")[:2000]
    assert str(ROOT) not in text, "results.json shows a path of the kit"
    leaked = sorted(ln for ln in secret_lines(set()) if ln in text)
    assert not leaked, f"hidden test or reference lines in results.json: {leaked[:5]}"
    return run


# --------------------------------------------------------------------------- item 2: links

def test_symlinks_to_the_reference_score_nothing(tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    for ex in contract.EXERCISES:
        (sub / ex.filename).symlink_to(ROOT / "reference" / ex.filename)
    run = grade(sub, "all", tmp_path / "out")                     # the opt-in ex6 too
    assert run.data["score"] == 0
    for ex in contract.EXERCISES:
        assert f"refused: {ex.filename} is a symbolic link" in run.outputs(ex.id), ex.id


def test_links_to_secrets_leak_nothing(tmp_path):
    secret = f"SECRET-{uuid.uuid4().hex}"
    sub = tmp_path / "submission"
    (sub / "ex1").mkdir(parents=True)
    hidden = SUITES / "ex1_attention" / "test_forward_np.py"
    (sub / "ex1" / "attention.py").symlink_to(hidden)                  # a hidden test file
    (sub / "multihead.py").symlink_to("/etc/shadow")
    (sub / "causal.py").symlink_to("/proc/self/environ")
    run = grade(sub, "ex1,ex3,ex4", tmp_path / "out", env_extra={"AG_HOSTILE_SECRET": secret})
    assert run.data["score"] == 0
    assert secret not in run.text, "the grader's environment reached results.json"
    assert "root:" not in run.text, "/etc/shadow reached results.json"
    hidden_lines = {ln.strip() for ln in hidden.read_text().splitlines() if len(ln.strip()) > 20}
    assert not [ln for ln in hidden_lines if ln in run.text], "a hidden test line reached results.json"
    assert "refused: ex1/attention.py is a symbolic link" in run.outputs("ex1")
    assert "refused: causal.py is a symbolic link" in run.outputs("ex4")


def test_linked_folders_and_hard_links_score_nothing(tmp_path):
    outside = tmp_path / "classmate"
    outside.mkdir()
    (outside / "attention.py").write_text(solution("ex1"))
    (outside / "causal.py").write_text(solution("ex4"))
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "ex1_attention").symlink_to(outside, target_is_directory=True)
    os.link(outside / "causal.py", sub / "causal.py")
    run = grade(sub, "ex1,ex4", tmp_path / "out")
    assert run.score("ex1") == 0 and run.score("ex4") == 0
    assert "refused: ex1_attention is a symbolic link" in run.outputs("ex1")
    assert "refused: causal.py is a hard link" in run.outputs("ex4")


def test_zip_members_that_are_links_score_nothing(tmp_path):
    import stat
    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, target in (("work/attention.py", str(ROOT / "reference" / "attention.py")),
                             ("work/causal.py", "/etc/shadow")):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    run = grade(archive, "ex1,ex4", tmp_path / "out")
    assert run.data["score"] == 0
    assert "refused: work/attention.py is a symbolic link (in a zip)" in run.outputs("ex1")
    assert "refused: work/causal.py is a symbolic link (in a zip)" in run.outputs("ex4")


def test_ten_small_zips_keep_the_grader_bounded(tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    payload = b"#" * (2 * 1024 * 1024 - 1000)
    for n in range(10):                          # ~1.5 GB once inflated, ~2 MB uploaded
        with zipfile.ZipFile(sub / f"part{n}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
            for m in range(40):
                zf.writestr(f"d{m}/attention.py", payload)
                zf.writestr(f"d{m}/causal.py", payload)
    (sub / "attention.py").write_text(solution("ex1"))
    assert sum(p.stat().st_size for p in sub.iterdir()) < 5 * 1024 * 1024
    run = grade(sub, "ex1,ex4", tmp_path / "out")
    assert run.score("ex1") == run.max_score("ex1") > 0
    assert run.score("ex4") == 0
    # before: 2.3 GB; the grader and its workers each stay far below that now
    assert run.peak_rss_mb < 1200, f"peak RSS {run.peak_rss_mb:.0f} MB"


# --------------------------------------------------------------------------- item 2: honest oddities

def test_a_bom_costs_nothing(tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "attention.py").write_bytes(b"\xef\xbb\xbf" + solution("ex1").encode())
    run = grade(sub, "ex1", tmp_path / "out")
    assert run.score("ex1") == run.max_score("ex1") == 20


def test_malformed_notebooks_cost_only_their_exercise(tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    cell = {"cell_type": "code", "metadata": {"nbgrader": "solution"}, "outputs": [],
            "source": solution("ex1").splitlines(keepends=True)}
    (sub / "attention.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}))
    (sub / "causal.ipynb").write_text(json.dumps({"cells": {"0": "not a list"}, "nbformat": 4}))
    (sub / "multihead.ipynb").write_text("[" * 100_000)
    run = grade(sub, "ex1,ex3,ex4", tmp_path / "out")
    assert run.score("ex1") == run.max_score("ex1") == 20
    assert run.score("ex3") == 0 and run.score("ex4") == 0
    assert "causal.ipynb is not a readable Jupyter notebook" in run.outputs("ex4")
    assert "multihead.ipynb is not a readable Jupyter notebook" in run.outputs("ex3")


# --------------------------------------------------------------------------- item 3: the working folder

def _plant_markers(proof: Path) -> list[str]:
    return sorted(p.name for p in proof.iterdir() if p.name.endswith("-imported"))


def test_modules_in_the_working_folder_are_never_imported(tmp_path, proof):
    """Planted before the grader starts: python -m puts the cwd first on sys.path."""
    cwd = proof / "cwd"
    cwd.mkdir(mode=0o777)
    cwd.chmod(0o777)
    plant = f'import os\nopen(os.path.join("{proof}", __name__ + "-imported"), "w").close()\n'
    for name in ("pytest", "_pytest", "numpy", "conftest", "argparse", "json", "torch"):
        (cwd / f"{name}.py").write_text(plant)
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "attention.py").write_text(solution("ex1"))
    run = grade(sub, "ex1", tmp_path / "out", cwd=cwd)
    assert _plant_markers(proof) == [], "a module from the working folder was imported"
    assert run.score("ex1") == run.max_score("ex1") == 20


def test_the_console_script_entry_imports_nothing_from_the_working_folder(tmp_path, proof):
    """``attention-autograder`` enters through ``autograder.__main__:console``; here with ``''``
    first on sys.path (as ``python -c`` has it), the worst case for the working folder."""
    plant = f'import os\nopen(os.path.join("{proof}", __name__ + "-imported"), "w").close()\n'
    for name in ("argparse", "pytest", "json", "textwrap"):
        (tmp_path / f"{name}.py").write_text(plant)
    entry = "import sys; sys.argv = ['attention-autograder', '--help']; " \
            "from autograder.__main__ import console; console()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([PYTHON, "-c", entry], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "grade" in proc.stdout
    assert _plant_markers(proof) == [], "a module from the working folder was imported"


@pytest.mark.parametrize("level", LEVELS)
def test_modules_planted_during_grading_never_run(tmp_path, proof, level):
    """The stub writes pytest.py & co. into the grader's world-writable cwd at import time."""
    cwd = proof / "cwd"
    cwd.mkdir(mode=0o777)
    cwd.chmod(0o777)
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "attention.py").write_text(corpus_file("plant_in_cwd", "attention.py",
                                                  CWD=str(cwd), PROOF=str(proof)))
    run = grade(sub, "ex1", tmp_path / "out", cwd=cwd, level=level)
    assert _plant_markers(proof) == [], "a module planted by the submission was imported"
    assert run.score("ex1") == 0
    planted = sorted(p.name for p in proof.iterdir() if p.name.startswith("planted-"))
    # Where the worker cannot even see the folder (namespaces level) nothing was planted:
    # the attack is stopped one step earlier. At the user level it plants them, and then
    # the grader must not import them.
    if level == "user":
        assert (cwd / "pytest.py").exists() and "planted-pytest" in planted, \
            "the attack could not plant its files at the user level: the case proves nothing"
    assert planted == [] or (cwd / "pytest.py").exists()


# --------------------------------------------------------------------------- item 4: raw frames

_FRAME_REASONS = ("referenced more than once", "nested more than", "more than 400 digits",
                  "header is not an object", "malformed reply")


@pytest.mark.parametrize("level", LEVELS)
def test_raw_frames_on_the_worker_socket_cost_only_those_calls(tmp_path, level):
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "attention.py").write_text(corpus_file("raw_frames", "attention.py"))
    (sub / "causal.py").write_text(solution("ex4"))
    run = grade(sub, "ex1,ex4", tmp_path / "out", timeout=10.0, level=level)
    assert run.score("ex4") == run.max_score("ex4") > 0, "an honest exercise lost points"
    assert run.score("ex1") < run.max_score("ex1")
    seen = {reason for reason in _FRAME_REASONS if reason in run.outputs("ex1")}
    assert len(seen) >= 3, f"the attack was seen only as {seen}; the case proves little"
    # before: one reply drove the grader from 434 MB to 2.4 GB
    assert run.peak_rss_mb < 1200, f"peak RSS {run.peak_rss_mb:.0f} MB"


# --------------------------------------------------------------------------- item 8: support code and bans

def _failing(run: Run, ex: str) -> set[str]:
    return {t["name"] for t in run.tests(ex) if t["status"] != "passed"}


def test_rebinding_support_globals_hides_no_in_place_bug(tmp_path):
    """The in-place softmax alone, then with the kit's support globals (and numpy.isnan)
    rebound to report "unchanged": the attack must not win a single test."""
    from mutants import mutant_source
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    (baseline / "attention.py").write_text(
        mutant_source(ROOT / "tests" / "submissions" / "ex1" / "mutants" / "softmax_in_place.diff"))
    attacked = tmp_path / "attacked"
    attacked.mkdir()
    (attacked / "attention.py").write_text(corpus_file("support_globals", "attention.py"))
    plain = grade(baseline, "ex1", tmp_path / "out-baseline")
    attack = grade(attacked, "ex1", tmp_path / "out-attacked")
    assert plain.score("ex1") < plain.max_score("ex1"), "the in-place mutant went unnoticed"
    assert attack.score("ex1") <= plain.score("ex1")
    assert _failing(plain, "ex1") <= _failing(attack, "ex1")


def test_banned_api_reached_at_run_time_fails(tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "attention.py").write_text(corpus_file("runtime_bans", "attention.py"))
    run = grade(sub, "ex1", tmp_path / "out")
    assert run.score("ex1") < run.max_score("ex1")
    assert "torch.nn.functional.scaled_dot_product_attention is not allowed in this exercise" \
        in run.outputs("ex1")
