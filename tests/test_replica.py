"""The Gradescope replica (autograder/packaging/verify/replica*.py) and setup.sh's torch source.

``test_replica_grades_like_gradescope`` builds ``autograder.zip``, its Docker image with
``setup.sh``, and grades the replica's submissions in fresh containers for real. It skips only
when Docker is unavailable AND the environment variable ``CI`` is not set: in CI (``.ci/run``
installs and starts Docker) a missing Docker is a failure.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import contract
from autograder.packaging.exports import gradescope
from autograder.packaging.verify import replica, replica_runs
from autograder.packaging.build import BuildContext, build
from replica_prebuild import replica_zip

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- setup.sh: where torch comes from


def _torch_from(tmp_path: Path, env: dict[str, str], index: str = "", links: str = "",
                pip_config: str = "") -> str:
    """The pip arguments setup.sh's ``torch_source`` picks, with a fake venv for ``pip config list``."""
    script = gradescope.render("setup.sh", PYTHON_VERSION="3.11", TORCH_VERSION="2.13.0+cpu",
                               PIP_VERSION="24.0", TORCH_INDEX=index, TORCH_FIND_LINKS=links,
                               KIT_VERSION="test", VENV=str(tmp_path / "venv"))
    function = re.search(r"^torch_source\(\) \{.*?^\}$", script, re.M | re.S)[0]
    assignments = "\n".join(ln for ln in script.splitlines()
                            if re.match(r"^(TORCH_INDEX|BUILD_TORCH_INDEX|BUILD_TORCH_FIND_LINKS)=", ln))
    fake = tmp_path / "venv" / "bin" / "python"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(f"#!/bin/sh\nprintf '%s' '{pip_config}'\n")
    fake.chmod(0o755)
    body = (f'set -euo pipefail\nVENV="{tmp_path / "venv"}"\nSOURCE=/autograder/source\n{assignments}\n'
            f'{function}\ntorch_source\necho "${{TORCH_FROM[*]+${{TORCH_FROM[*]}}}}"\n')
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "AUTOGRADER_TORCH"))}
    out = subprocess.run(["bash", "-c", body], env=clean | env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_setup_sh_torch_source_rules(tmp_path):
    cpu = "--index-url https://download.pytorch.org/whl/cpu"
    assert _torch_from(tmp_path, {}) == cpu
    # pip's own settings are left to pip (an --index-url would override PIP_INDEX_URL)
    assert _torch_from(tmp_path, {"PIP_INDEX_URL": "http://mirror/simple"}) == ""
    assert _torch_from(tmp_path, {"PIP_FIND_LINKS": "/opt/wheels"}) == ""
    assert _torch_from(tmp_path, {}, pip_config="global.index-url='http://mirror/simple'\n") == ""
    assert _torch_from(tmp_path, {}, pip_config="global.cert='/etc/ssl/certs/ca.crt'\n") == cpu
    # the build options, baked in
    assert _torch_from(tmp_path, {}, index="http://idx/cpu") == "--index-url http://idx/cpu"
    assert _torch_from(tmp_path, {}, links="wheels") == "--no-index --find-links /autograder/source/wheels"
    assert _torch_from(tmp_path, {"PIP_INDEX_URL": "http://m"}, index="http://idx") == "--index-url http://idx"
    # the environment at image build wins over the baked options; a folder over an index
    assert _torch_from(tmp_path, {"AUTOGRADER_TORCH_INDEX": "http://env"}, index="http://idx") == \
        "--index-url http://env"
    assert _torch_from(tmp_path, {"AUTOGRADER_TORCH_FIND_LINKS": "/w"}, index="http://idx") == \
        "--no-index --find-links /w"


def test_build_options_are_baked_and_checked(tmp_path):
    ctx = build(BuildContext(root=ROOT, out=tmp_path, exercises=contract.select("ex1"),
                             torch_find_links="/srv/wheels", say=lambda _m: None), only=["gradescope"])
    import zipfile
    with zipfile.ZipFile(ctx.artifacts["gradescope"][0]) as archive:
        setup = archive.read("setup.sh").decode()
    assert 'BUILD_TORCH_FIND_LINKS="/srv/wheels"' in setup and 'BUILD_TORCH_INDEX=""' in setup
    for bad in ('http://x" ; rm -rf /', "$(id)", "a b"):
        with pytest.raises(gradescope.BuildError):
            gradescope._baked("--torch-index", bad)


# --------------------------------------------------------------------------- the replica's pieces


def test_setup_sh_marks_where_the_kits_own_steps_begin():
    """The replica keeps an image of the environment's steps (replica.environment_part) and
    runs each zip's whole setup.sh on it: those steps must install everything and touch no
    kit file but requirements.txt, and every step that reads the kit must come after them."""
    script = gradescope.render("setup.sh", PYTHON_VERSION="3.11", TORCH_VERSION="2.13.0+cpu",
                               PIP_VERSION="24.0", TORCH_INDEX="", TORCH_FIND_LINKS="",
                               KIT_VERSION="test", VENV="/opt/venv")
    steps = replica.environment_part(script)
    assert steps is not None and script.startswith(steps)
    for needed in ("apt-get install", "-m venv", '"torch==${TORCH_VERSION}"', '-r "${SOURCE}/requirements.txt"'):
        assert needed in steps, needed
    kit_steps = script[len(steps):]
    for kit_only in ("import autograder", "ensure_user", "compileall", "autograder.sandbox.harden"):
        assert kit_only in kit_steps and kit_only not in steps, kit_only
    assert replica.environment_part("#!/bin/sh\necho no marker\n") is None


def test_host_pip_detects_wheels_and_config(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    for key in list(os.environ):
        if key.startswith(("PIP_", "AUTOGRADER_TORCH")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_FIND_LINKS", f"file://{wheels}")
    monkeypatch.setenv("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt")
    monkeypatch.setattr(replica, "PIP_CONFIG_FILES", ())
    host = replica.host_pip("2.13.0+cpu")
    assert str(wheels) in host.binds
    assert not any(b.startswith("/etc/ssl") for b in host.binds)          # rebuilt in the container
    assert host.env["AUTOGRADER_TORCH_FIND_LINKS"] == str(wheels)
    assert host.env["PIP_FIND_LINKS"] == f"file://{wheels}"
    assert replica.host_pip("2.12.0").env.get("AUTOGRADER_TORCH_FIND_LINKS") is None   # not that version


def test_replica_submissions(tmp_path):
    exercises = contract.EXERCISES
    subs = {c.name: c for c in replica_runs.cases(ROOT, exercises, tmp_path)}
    for ex in exercises:
        link = subs["symlinks"].folder / ex.filename
        assert link.is_symlink() and os.readlink(link) == f"/autograder/source/reference/{ex.filename}"
        assert (subs["solutions"].folder / ex.filename).read_text() == \
            (ROOT / "solutions" / ex.folder / ex.filename).read_text()
    changed = [ex for ex in exercises if (subs["mutant"].folder / ex.filename).read_text()
               != (subs["solutions"].folder / ex.filename).read_text()]
    assert len(changed) == 1
    assert "/autograder/source/reference/" in (subs["reader"].folder / exercises[0].filename).read_text()
    round3 = {ex.id: (subs["round3"].folder / ex.filename).read_text() for ex in exercises}
    assert "shmget" in round3[exercises[0].id] and "AF_VSOCK" in round3[exercises[0].id]
    assert "\\udcff" in round3["ex3"]
    for ex in exercises:                       # valid Python, and honest work beside the attacks
        compile(round3[ex.id], ex.filename, "exec")
        assert (ROOT / "solutions" / ex.folder / ex.filename).read_text().splitlines()[-1] in round3[ex.id] \
            or ex.id == "ex3"
    round4 = {ex.id: (subs["round4"].folder / ex.filename).read_text() for ex in exercises}
    assert "ag-round4-note" in round4[exercises[0].id] and "/bin/true" in round4[exercises[1].id]
    for ex in exercises:
        compile(round4[ex.id], ex.filename, "exec")
    assert [c.expect for c in subs.values()] == ["full", "zero", "partial", "zero", "zero", "full", "full"]


def test_round4_attacks_cost_their_exercise_where_they_work(tmp_path):
    """Without a sandbox (as an ordinary user: notes land in the world-writable folders) the
    first file's notes are found by the second, which refuses to import: in the replica, full
    marks for the round4 case can only mean the defences held."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv(1) to run the attacks as nobody")
    def as_nobody(code: str) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                               "/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=300)
    try:
        planted = as_nobody(replica_runs._ROUND4_PLANT)
        assert planted.returncode == 0, planted.stderr[-2000:]
        found = as_nobody(replica_runs._ROUND4_FIND)
        assert found.returncode != 0 and "round 4 defences let through: [" in found.stderr, found.stderr[-2000:]
    finally:
        import pwd

        from autograder.sandbox import writable
        nobody = pwd.getpwnam("nobody")
        for folder in writable.places(nobody.pw_uid, nobody.pw_gid):
            Path(folder, "ag-round4-note").unlink(missing_ok=True)


def test_round3_attacks_cost_their_exercise_where_they_work(tmp_path):
    """Outside any sandbox the attacks succeed, so the file refuses to import: in the replica,
    full marks for the round3 case can only mean the defences held. Run in a private IPC
    namespace of its own (``unshare --ipc``), so the segments it pins die with it."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1): the segments must not outlive the check")
    exercises = contract.EXERCISES
    case = next(c for c in replica_runs.cases(ROOT, exercises, tmp_path, ("round3",)))
    done = subprocess.run(["unshare", "--ipc", sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1])",
                           str(case.folder / exercises[0].filename)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "round 3 defences let through: sockets ['AF_INET'" in done.stderr, \
        done.stderr[-2000:]


def _run(expect: str, score: float, privileges: str = "default", level: str = "user") -> list[str]:
    case = replica_runs.Case("x", Path("."), expect, "")
    run = replica_runs.Run(case, privileges, score=score, max_score=100.0, level=level)
    return replica_runs.judge(run, {"tests": []}, 100.0)


def test_judge_flags_every_surprise():
    assert _run("full", 100) == [] and _run("zero", 0) == [] and _run("partial", 97.5) == []
    assert _run("full", 99.5) and _run("zero", 0.5) and _run("partial", 100) and _run("partial", 0)
    assert _run("full", 100, "sys_admin", "namespaces") == []
    assert _run("full", 100, "sys_admin", "user")                       # weaker than the platform allows
    assert _run("full", 100, level="?")
    run = replica_runs.Run(replica_runs.Case("x", Path("."), "zero", ""), "default")
    assert replica_runs.judge(run, None, 100.0)                          # no results.json


def test_isolation_level_sources():
    assert replica_runs.isolation_level({"extra_data": {"isolation": "user"}}, "isolation: process") == "user"
    assert replica_runs.isolation_level({}, "Isolation: namespaces (mount, pid, net)") == "namespaces"
    assert replica_runs.isolation_level(None, "nothing said") == "?"


# --------------------------------------------------------------------------- the replica, for real


@pytest.mark.slow
def test_replica_grades_like_gradescope(tmp_path):
    ok, why = replica.docker_available()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but Docker is unavailable: {why}")
        pytest.skip(f"Docker is unavailable here ({why}) and CI is not set")
    # every registered exercise, the opt-in ex6 too (120/120 in the replica); the zip whose image
    # tests/conftest.py may have started building already (tests/replica_prebuild.py)
    zip_path = replica_zip(tmp_path / "dist")
    proc = subprocess.run([sys.executable, "-m", "autograder.packaging.verify.replica_runs", str(zip_path),
                           "--replica-jobs", "3"], cwd=ROOT, capture_output=True, text=True, timeout=1500)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report[-6000:]
    rows = re.findall(r"^  (solutions|stubs|mutant|symlinks|reader|round3|round4) +(default|sys_admin) +(\S+)/(\S+) .* ok$",
                      report, re.M)
    assert len(rows) == 14, report[-6000:]
    scores = {(name, priv): float(score) for name, priv, score, _max in rows}
    total = float(sum(ex.points for ex in contract.EXERCISES))           # 120: ex1-ex6
    for priv in ("default", "sys_admin"):
        assert scores[("solutions", priv)] == scores[("round3", priv)] == scores[("round4", priv)] == total
        assert scores[("stubs", priv)] == scores[("symlinks", priv)] == scores[("reader", priv)] == 0.0
        assert 0.0 < scores[("mutant", priv)] < total
