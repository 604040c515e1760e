"""Isolation levels (autograder/sandbox/levels.py): picked right, reported, and fair.

Grading runs go through the real CLI with a Python installed outside ``/root`` (as on
Gradescope; the kit's own venv lives under a 0700 ``/root`` here), on a copy of the kit in a
world-readable folder like ``/autograder/source``, so that the *user* level's locking is
really exercised (and this checkout is left alone). A "Docker default" run drops
CAP_SYS_ADMIN with ``setpriv``. Every submission is graded at each level; grades must be
identical, and an attack riding on a correct solution must get nothing at the isolating
levels (a control run at the *process* level shows the same attack does get things there).
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
import sys
from pathlib import Path

import pytest

from autograder.sandbox import harden, isolation, levels, limits, netfilter
from helpers import worker_user
from outside_python import outside_python

ROOT = Path(__file__).resolve().parents[1]
AGTEST_VENV = Path("/opt/agtest-venv")
AGTEST = AGTEST_VENV / "bin" / "python"
WORKER = worker_user("iso")
IS_ROOT = os.geteuid() == 0
RUN_TIMEOUT = 300
needs_root = pytest.mark.skipif(not IS_ROOT, reason="isolation levels other than 'process' need root")


# --------------------------------------------------------------------------- fast unit checks

def test_forced_level_stronger_than_the_platform_is_refused(monkeypatch):
    monkeypatch.setattr(levels, "detect", lambda: ("user", "no namespaces here"))
    monkeypatch.delenv(levels.ENV_VAR, raising=False)
    assert levels.resolve("auto") == ("user", "no namespaces here")
    assert levels.resolve("process")[0] == "process"
    with pytest.raises(levels.IsolationUnavailable, match="namespaces"):
        levels.resolve("namespaces")
    monkeypatch.setenv(levels.ENV_VAR, "process")
    assert levels.resolve("auto")[0] == "process"          # the environment forces it
    assert levels.resolve("user")[0] == "user"             # the config wins over the environment
    with pytest.raises(ValueError):
        levels.resolve("chroot")


def test_every_level_has_its_own_description():
    texts = [levels.describe_level(level) for level in levels.names()]
    assert len(set(texts)) == len(levels.names()) == 4 and all(texts)


def test_locking_a_folder_spares_the_interpreter_inside_it(tmp_path):
    (tmp_path / "venv" / "lib").mkdir(parents=True)
    (tmp_path / "kit").mkdir()
    (tmp_path / "run_autograder").write_text("")
    keep = {str(tmp_path / "venv" / "lib")}
    assert harden.lock_targets(str(tmp_path), keep) == [str(tmp_path / "kit"), str(tmp_path / "run_autograder")]
    assert harden.lock_targets(str(tmp_path / "venv" / "lib"), keep) == []
    assert harden.lock_targets(str(tmp_path / "kit"), keep) == [str(tmp_path / "kit")]


def test_network_filter_refuses_inet_sockets_only():
    if netfilter.program() is None:
        pytest.skip("no seccomp filter known for this machine's architecture")
    insns = netfilter.program()
    for i, (code, jt, jf, _k) in enumerate(insns):    # every jump lands inside the program
        if code in (0x15, 0x35):
            assert i + 1 + max(jt, jf) < len(insns)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        answer = b"?"
        try:
            os.close(read_end)
            installed = netfilter.block_network()
            answer = b"I" if installed else b"N"
            for family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
                try:
                    socket.socket(family, socket.SOCK_STREAM).close()
                    answer += b"o"
                except OSError:
                    answer += b"x"
        finally:
            os.write(write_end, answer)
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 16)
    os.waitpid(pid, 0)
    assert answer == b"Ixxo", answer


PROBE = ("import os\n"
         "def entries(path):\n"
         "    try:\n"
         "        return sorted(os.listdir(path))\n"
         "    except OSError:\n"
         "        return None\n")


@needs_root
@pytest.mark.parametrize("own_root", [True, False], ids=["own-root", "hidden-by-mounts"])
def test_namespaces_worker_sees_only_its_root_or_nothing_of_the_kit(monkeypatch, capsys, own_root):
    """The allowlist root; and where it cannot be built, the previous hide-by-mounts path."""
    from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules, allowlist
    from autograder.sandbox import forkserver

    if not own_root:
        def refuse(*args, **kwargs):
            raise PermissionError(1, "bind mounts refused (simulated)")
        monkeypatch.setattr(allowlist, "build", refuse)
    server = forkserver.ForkServer()            # forked now: sees the patched allowlist
    config = SandboxConfig(user=WORKER, isolation="namespaces", hide=[str(ROOT / "autograder")])
    backend = forkserver.ForkedBackend(config, isolation.get("namespaces"), "forced", zygote=server)
    box = Sandbox([ModuleSource("probe", "probe.py", PROBE)], config, backend)
    try:
        box.start()
        probe = StudentModules(box, ["probe"]).probe
        assert probe.entries(str(ROOT / "autograder")) in (None, [])   # absent, or an empty cover
        assert box.level == "namespaces" and box.worker_root == ("pivot_root" if own_root else "hidden")
        if own_root:        # only what imports need: the venv and this process's sys.path entries
            on_path = {Path(p).resolve().relative_to(ROOT).parts[0] for p in sys.path
                       if p and Path(p).resolve().is_relative_to(ROOT) and Path(p).resolve() != ROOT}
            assert set(probe.entries(str(ROOT))) <= {".venv", "tests"} | on_path
            assert probe.entries("/etc") == ["group", "ld.so.cache", "localtime", "passwd"]
            assert probe.entries("/home") is None and probe.entries("/usr/bin") is None
        else:
            assert "shadow" in probe.entries("/etc")                     # the machine is visible
    finally:
        box.close()
        server.close()
    note = "no root of its own for the worker here"
    assert (note in capsys.readouterr().err) is not own_root


@needs_root
def test_detection_matches_what_the_kernel_allows():
    """Namespaces where util-linux's unshare can make them (this machine), else user."""
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare is needed as the independent witness")
    can = subprocess.run(["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc", "true"],
                         capture_output=True).returncode == 0
    assert levels.detect()[0] == ("namespaces" if can else "user")


# --------------------------------------------------------------------------- graded runs

@pytest.fixture(scope="module")
def agtest_python() -> Path:
    """A Python outside /root with what grading needs (made once, reused)."""
    return outside_python()


@pytest.fixture(scope="module")
def kit(agtest_python) -> Path:
    """A copy of the kit in a folder everyone may enter, as /autograder/source is."""
    base = Path(tempfile.mkdtemp(prefix="ag-kit-", dir="/var/tmp"))
    base.chmod(0o755)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("autograder", "reference"):
        shutil.copytree(ROOT / name, base / "source" / name, ignore=ignore)
    (base / "source").chmod(0o755)
    meta = base / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"name": "Ada Student", "email": "ada@example.org"}]}))
    meta.chmod(0o644)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def grade(kit: Path, files: dict[str, str], level: str | None, exercises: str = "ex1",
          prefix: tuple[str, ...] = (), env: dict | None = None, share: Path | None = None) -> tuple[dict, str]:
    """Grade ``files`` with the CLI from the kit copy; (results.json, stderr)."""
    run = kit / f"run-{uuid.uuid4().hex[:8]}"
    (run / "submission").mkdir(parents=True)
    for name, text in files.items():
        (run / "submission" / name).write_text(text)
    for folder in (run, run / "submission"):
        folder.chmod(0o755)
    results = run / "results" / "results.json"
    cmd = [*prefix, str(AGTEST), "-m", "autograder", "grade", str(run / "submission"),
           "--exercises", exercises, "--results", str(results), "--worker-user", WORKER]
    if level:
        cmd += ["--isolation", level]
    base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/root",
                "PYTHONPATH": str(kit / "source"), limits.METADATA_ENV: str(kit / "submission_metadata.json"),
                limits.SHARE_ENV: str(share or "")}
    proc = subprocess.run(cmd, cwd=kit / "source", env=base_env | (env or {}), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)
    assert results.exists(), f"no results.json: {proc.stderr[-3000:]}"
    return json.loads(results.read_text()), proc.stderr


def per_test(data: dict) -> dict[str, tuple[str, float]]:
    return {t["name"]: (t.get("status", ""), float(t["score"])) for t in data["tests"]}


def solution(ex_folder: str, filename: str) -> str:
    return (ROOT / "solutions" / ex_folder / filename).read_text()


ATTACK = r'''

# ---- attack (appended to a correct solution): what can the worker reach?
def _reach():
    import json as _j, os as _o, socket as _s
    proof = "@PROOF@"
    if _o.path.exists(proof + "/loot.json"):
        return
    got = {}
    for label, path in @TARGETS@.items():
        try:
            if _o.path.isdir(path):
                got[label] = "listed %d" % len(_o.listdir(path))
            else:
                with open(path, "rb") as handle:
                    got[label] = "read %d" % len(handle.read())
        except OSError as exc:
            got[label] = "denied " + type(exc).__name__
    try:                                        # a server of the test, on the machine's loopback
        _s.create_connection(("127.0.0.1", @PORT@), timeout=3).close()
        got["network"] = "open"
    except OSError as exc:
        got["network"] = "denied " + type(exc).__name__
    for folder in ("/tmp", "/dev/shm"):
        try:                                    # refused where Landlock confines the worker
            with open(folder + "/ag-litter-@TOKEN@", "wb") as handle:
                handle.write(b"x" * 4096)
        except OSError:
            pass
    written = 0
    try:
        with open("/dev/shm/ag-big-@TOKEN@", "wb") as handle:
            for _ in range(80):
                handle.write(b"\0" * (1 << 20))
                handle.flush()
                written += 1
    except (OSError, MemoryError):
        pass
    got["shm_mb"] = written
    got["pids"] = sum(name.isdigit() for name in _o.listdir("/proc"))
    try:
        got["root"] = sorted(_o.listdir("/"))
    except OSError as exc:
        got["root"] = "denied " + type(exc).__name__
    try:
        with open("/etc/shadow", "rb") as handle:
            got["shadow"] = "read %d" % len(handle.read())
    except OSError as exc:
        got["shadow"] = "denied " + type(exc).__name__
    got["uid"] = _o.getuid()
    with open(proof + "/loot.json", "w") as handle:
        _j.dump(got, handle)


_reach()
'''


def attack_files(kit: Path, token: str, proof: Path, port: int) -> dict[str, str]:
    suite = sorted((kit / "source" / "autograder" / "suites" / "ex1_attention").glob("test_*.py"))[0]
    targets = {"kit": str(kit / "source" / "autograder"), "suite": str(suite),
               "reference": str(kit / "source" / "reference" / "attention.py"),
               "metadata": str(kit / "submission_metadata.json")}
    code = ATTACK.replace("@PROOF@", str(proof)).replace("@TOKEN@", token).replace("@TARGETS@", repr(targets))
    code = code.replace("@PORT@", str(port))
    return {"attention.py": solution("ex1_attention", "attention.py") + code}


def _content(outcome: str) -> bool:
    """Whether an attack outcome obtained anything ("read 12", "listed 3"; not 0, not denied)."""
    return outcome.split()[0] in ("read", "listed") and int(outcome.split()[1]) > 0


@needs_root
def test_levels_grade_identically_and_the_attack_gets_nothing(kit):
    stub = (ROOT / "assignments" / "ex1_attention" / "attention.py").read_text()
    by_level = {}
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    for level in ("namespaces", "user", "process"):
        token = uuid.uuid4().hex[:10]
        proof = Path(f"/var/tmp/ag-proof-{token}")
        proof.mkdir(mode=0o1777)
        proof.chmod(0o1777)
        try:
            data, err = grade(kit, attack_files(kit, token, proof, port), level, share=proof)
            loot = json.loads((proof / "loot.json").read_text())
        finally:
            shutil.rmtree(proof, ignore_errors=True)
        stub_data, _ = grade(kit, {"attention.py": stub}, level)
        litter = [p for p in (f"/tmp/ag-litter-{token}", f"/dev/shm/ag-litter-{token}",
                              f"/dev/shm/ag-big-{token}") if os.path.exists(p)]
        for path in litter:
            os.unlink(path)
        assert data["extra_data"]["isolation"] == level, err[-2000:]
        assert f"isolation: {level}" in err
        assert data["score"] == 20.0, (level, data["output"])
        assert stub_data["score"] == 0.0, (level, stub_data["output"])
        by_level[level] = (per_test(data), per_test(stub_data), loot, litter)
    server.close()

    assert by_level["namespaces"][:2] == by_level["user"][:2] == by_level["process"][:2]
    for level in ("namespaces", "user"):
        loot, litter = by_level[level][2], by_level[level][3]
        # the worker user: WORKER, or WORKER-2, … when another grader holds it (users.claim)
        assert loot["uid"] != 0 and pwd.getpwuid(loot["uid"]).pw_name.startswith(WORKER), loot["uid"]
        for label in ("kit", "suite", "reference", "metadata"):
            assert not _content(loot[label]), f"{level}: the worker got the {label}: {loot[label]}"
        assert loot["network"].startswith("denied"), f"{level}: network {loot['network']}"
        assert not litter, f"{level}: the worker's files outlived it: {litter}"
        assert loot["shm_mb"] <= 64, f"{level}: wrote {loot['shm_mb']} MB to /dev/shm"
        assert not _content(loot["shadow"]), f"{level}: /etc/shadow {loot['shadow']}"
    ns = by_level["namespaces"][2]
    assert ns["pids"] < 10, "a fresh /proc shows only the worker's namespace"
    # its own root: system libraries, the interpreter (here under /opt), devices, scratch,
    # and /var only for the test's shared proof folder (AUTOGRADER_SANDBOX_SHARE)
    assert set(ns["root"]) <= {"usr", "lib", "lib64", "lib32", "opt", "dev", "etc", "proc", "tmp",
                               "var"}, ns["root"]
    assert ns["shadow"] == "denied FileNotFoundError"
    control = by_level["process"][2]        # same attack, no file isolation: the files are read
    assert all(_content(control[label]) for label in ("kit", "suite", "reference", "metadata")), control
    # the process level keeps the seccomp filter (no socket but AF_UNIX) where one exists
    assert control["network"] == ("open" if netfilter.program() is None else "denied PermissionError")
    # the user level locked the copy's kit for the worker user, root-owned, 0700
    info = (kit / "source" / "autograder").stat()
    assert (info.st_uid, info.st_mode & 0o077) == (0, 0)


@needs_root
def test_docker_default_privileges_pick_the_user_level(kit):
    """CAP_SYS_ADMIN dropped (as in Docker's default profile): auto-detection says 'user'."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to drop CAP_SYS_ADMIN")
    data, err = grade(kit, {"attention.py": solution("ex1_attention", "attention.py")}, None,
                      prefix=("setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"))
    assert "isolation: user — root, but private namespaces are refused" in err, err[-2000:]
    assert data["extra_data"]["isolation"] == "user"
    assert data["score"] == 20.0, data["output"]


@needs_root
@pytest.mark.parametrize("level", ["user", "namespaces"])
def test_worker_needs_nothing_from_the_graders_home(kit, level):
    """Python outside /root, HOME=/root at 0700 (Gradescope): matplotlib still works in the
    worker (ex2 once scored 0 for everyone: matplotlib's config folder was /root's)."""
    assert os.stat("/root").st_mode & 0o777 == 0o700
    Path("/root/.config/matplotlib/stylelib").mkdir(parents=True, exist_ok=True)
    data, err = grade(kit, {"visualize.py": solution("ex2_visualization", "visualize.py")}, level,
                      exercises="ex2")
    assert data["extra_data"]["isolation"] == level
    total = sum(t["max_score"] for t in data["tests"])       # per-test scores: 4 decimals each
    assert total > 0 and data["score"] == pytest.approx(total, abs=1e-6), data["output"] + err[-2000:]
