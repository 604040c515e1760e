"""`check` on Windows, macOS and Linux: the spawned worker (no fork) and the shipped runtime.

Windows is emulated on Linux by an interpreter where ``os.fork``, ``os.forkpty``,
``resource``, ``pwd``, ``grp``, ``fcntl`` and ``socket.send_fds``/``recv_fds``/
``SOCK_SEQPACKET`` do not exist (a ``sitecustomize`` on ``PYTHONPATH``, inherited by every
child, the spawned workers included). ``os.register_at_fork`` becomes a no-op rather than
disappearing: torch's Linux build calls it at import (its Windows build does not).
"""
from __future__ import annotations

import ast
import os
import py_compile
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import check, contract
from autograder.packaging.release import readmes
from autograder.packaging import release as rel
from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules, WorkerCrashed, startup
from mutants import mutant_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
MUTANTS = Path(__file__).resolve().parent / "submissions"

NO_FORK = '''
import os, socket, sys
for name in ("resource", "pwd", "grp", "fcntl"):
    sys.modules[name] = None
for name in ("fork", "forkpty", "register_at_fork"):
    if hasattr(os, name):
        delattr(os, name)
os.register_at_fork = lambda **_hooks: None
for name in ("send_fds", "recv_fds", "SOCK_SEQPACKET"):
    if hasattr(socket, name):
        delattr(socket, name)
'''


@pytest.fixture(scope="module")
def no_fork_env(tmp_path_factory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("nofork")
    (site / "sitecustomize.py").write_text(NO_FORK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env.update(PYTHONPATH=str(site), PYTHONNOUSERSITE="1")
    return env


def _plain_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_the_emulation_removes_fork_and_the_posix_modules(no_fork_env):
    probe = ("import os, importlib\n"
             "print('fork', hasattr(os, 'fork'))\n"
             "for m in ('resource', 'pwd', 'grp', 'fcntl'):\n"
             "    try:\n        importlib.import_module(m); print(m, 'present')\n"
             "    except ImportError:\n        print(m, 'missing')\n"
             "import subprocess, multiprocessing, torch\n"
             "from autograder.sandbox import SandboxConfig, startup\n"
             "import autograder.check, autograder.grading\n"
             "print('spawn', startup.spawns(SandboxConfig()))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=no_fork_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:6] == ["fork False", "resource missing", "pwd missing",
                                           "grp missing", "fcntl missing", "spawn True"]


def test_spawn_is_chosen_where_fork_is_missing_or_unsafe(monkeypatch):
    monkeypatch.delenv(startup.SPAWN_ENV, raising=False)
    config = SandboxConfig()
    monkeypatch.setattr(sys, "platform", "linux")
    assert not startup.spawns(config)
    for platform in ("darwin", "win32"):
        monkeypatch.setattr(sys, "platform", platform)
        assert startup.spawns(config)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delattr(os, "fork")
    assert startup.spawns(config)
    assert startup.spawns(SandboxConfig(worker_start="fork"))          # no fork: no choice
    monkeypatch.undo()
    monkeypatch.setenv(startup.SPAWN_ENV, "spawn")
    assert startup.spawns(SandboxConfig(isolation="process"))
    assert not startup.spawns(SandboxConfig(isolation="user"))         # never a silent downgrade


SOURCE = '''
import os, subprocess, sys
print("noisy import " * 5000)
def add(a, b):
    print("adding", a, b)
    sys.stdout.write("x" * 100000)
    return a + b
def pid():
    return os.getpid()
def hang():
    while True:
        pass
def hang_with_child(path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(path, "w") as f:
        f.write(str(child.pid))
    while True:
        pass
'''


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_a_spawned_worker_keeps_prints_off_the_channel_and_restarts_after_a_timeout(tmp_path):
    box = Sandbox([ModuleSource("mod", "mod.py", SOURCE)],
                  SandboxConfig(call_timeout=2.0, isolation="process", worker_start="spawn"))
    box.start()
    student = StudentModules(box, ["mod"])
    try:
        assert student.mod.add(2, 3) == 5                   # after 100 kB of prints
        first = student.mod.pid()
        assert first != os.getpid()
        with pytest.raises(WorkerCrashed, match="did not finish within 2 s"):
            student.mod.hang()
        assert _gone(first)
        second = student.mod.pid()                          # a fresh worker, module reloaded
        assert second != first and student.mod.add(1, 1) == 2
        marker = tmp_path / "child.pid"
        with pytest.raises(WorkerCrashed):
            student.mod.hang_with_child(str(marker))
        assert _gone(second) and _gone(int(marker.read_text()))   # its process group too
        assert student.mod.add(2, 2) == 4
        assert box.output().startswith("noisy import")       # the prints went to the output
    finally:
        box.close()


LOADED = '''
import sys
def loaded(name):
    return name in sys.modules
'''


def test_a_spawned_worker_loads_what_the_exercises_calls_need_before_it_is_ready():
    """A spawned worker (Windows, macOS) loads the warm-up parts it is given, not every part:
    `check` of ex1 alone does not draw a figure first (matplotlib's Agg canvas and fonts)."""
    config = SandboxConfig(isolation="process", worker_start="spawn")
    for parts, drew in ((("meta",), False), (None, True)):      # None: not known, every part
        box = Sandbox([ModuleSource("mod", "mod.py", LOADED)], config, startup.choose(config, warm_up=parts))
        box.start()
        try:
            student = StudentModules(box, ["mod"])
            assert student.mod.loaded("sympy"), parts           # the meta device's first call
            assert student.mod.loaded("matplotlib.backends.backend_agg") is drew, parts
            assert not student.mod.loaded("torch._dynamo"), parts     # not even an optimizer's step
        finally:
            box.close()


def _release_with(tmp_path: Path, bug: bool) -> Path:
    folder = tmp_path / ("buggy" if bug else "correct")
    rel.write_release(rel.build_release(ROOT), folder)
    for ex in contract.EXERCISES:
        shutil.copy(SOLUTIONS / ex.folder / ex.filename, folder / ex.folder / ex.filename)
    if bug:
        mutant = MUTANTS / "ex1" / "mutants" / "np_no_sqrt_scaling.diff"
        (folder / "ex1_attention" / "attention.py").write_text(mutant_source(mutant))
    return folder


def _verdicts(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines()
            if line.strip().startswith(("✓", "✗", "public tests:", "Public tests:"))]


@pytest.mark.slow
@pytest.mark.parametrize("bug", [False, True], ids=["correct", "one_bug"])
def test_check_without_fork_gives_the_linux_results(tmp_path, no_fork_env, bug):
    folder = _release_with(tmp_path, bug)
    linux = subprocess.run([sys.executable, "check.py", "-v"], cwd=folder, env=_plain_env(),
                           capture_output=True, text=True, timeout=400)
    emulated = subprocess.run([sys.executable, "check.py", "-v"], cwd=folder, env=no_fork_env,
                              capture_output=True, text=True, timeout=400)
    assert linux.returncode == emulated.returncode == (1 if bug else 0), emulated.stdout + emulated.stderr
    assert "forked from this one" in linux.stdout
    assert "started without fork" in emulated.stdout and "no memory limit" in emulated.stdout
    assert _verdicts(emulated.stdout) == _verdicts(linux.stdout)
    assert ("✗" in emulated.stdout) == bug
    passed = re.findall(r"public tests: (\d+) of (\d+) passed", emulated.stdout)
    assert len(passed) == len(check.public_exercises())
    assert all(a == b for a, b in passed) != bug


# ----------------------------------------------------------------------------- oldest Python

def _shipped_python(release: rel.Release) -> dict[str, str]:
    return {path: text for path, text in release.files.items()
            if path.endswith(".py") and (path.startswith("autograder/") or Path(path).name in
                                         ("check.py", "conftest.py") or "/tests/" in path)}


def _oldest_python() -> str:
    """The oldest working interpreter here, from the claimed minimum up (pyenv shims may exist
    for versions that are not installed: each candidate is run)."""
    candidates = [f"python3.{minor}" for minor in range(readmes.PYTHON_MIN[1], readmes.PYTHON_MAX[1] + 1)]
    for name in [*candidates, "/usr/bin/python3.11", sys.executable]:
        path = shutil.which(name)
        if path and subprocess.run([path, "-c", "pass"], capture_output=True, timeout=60).returncode == 0:
            return path
    return sys.executable


def _uses_union_annotations(tree: ast.AST) -> bool:
    """Whether an annotation uses PEP 604's ``X | Y`` (evaluated at import before 3.10)."""
    annotations = [n.annotation for n in ast.walk(tree) if isinstance(n, (ast.arg, ast.AnnAssign))
                   and n.annotation is not None]
    annotations += [n.returns for n in ast.walk(tree)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None]
    return any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.BitOr)
               for a in annotations for x in ast.walk(a))


def test_the_shipped_runtime_parses_on_the_oldest_python_claimed(tmp_path):
    """The README claims Python PYTHON_MIN: no newer syntax in anything the release runs, and
    (below 3.10) `X | Y` annotations deferred by `from __future__ import annotations`."""
    release = rel.build_release(ROOT)
    files = _shipped_python(release)
    assert any(p.startswith("autograder/sandbox/") for p in files)
    assert f"Python {readmes.PYTHON_RANGE}" in release.files["README.md"]
    for path, text in files.items():
        tree = ast.parse(text, filename=path, feature_version=readmes.PYTHON_MIN)
        future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                     any(a.name == "annotations" for a in n.names) for n in tree.body)
        if readmes.PYTHON_MIN < (3, 10) and _uses_union_annotations(tree):
            assert future, f"{path}: `X | Y` annotations need `from __future__ import annotations`"
    # byte-compile with the oldest interpreter available here
    oldest = _oldest_python()
    for path, text in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    done = subprocess.run([oldest, "-m", "compileall", "-q", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    py_compile.compile(str(tmp_path / "autograder" / "check.py"), doraise=True)


def test_a_spawned_worker_ends_when_the_checker_is_killed_during_a_hang(tmp_path):
    """The checker (a notebook kernel, a terminal) dies while student code spins: the
    spawned worker notices and exits instead of spinning forever."""
    script = tmp_path / "checker.py"
    script.write_text(
        "import sys\n"
        "from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules\n"
        f"box = Sandbox([ModuleSource('mod', 'mod.py', {SOURCE!r})],\n"
        "              SandboxConfig(call_timeout=600, isolation='process', worker_start='spawn'))\n"
        "box.start()\n"
        "mod = StudentModules(box, ['mod']).mod\n"
        "print(mod.pid(), flush=True)\n"
        "mod.hang()\n")
    checker = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=_plain_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        worker = int(checker.stdout.readline())
        time.sleep(1.0)                                     # now inside hang()
        assert not _gone(worker, within=0.5)
        checker.kill()
        checker.wait()
        assert _gone(worker, within=10.0)
    finally:
        checker.kill()
        checker.wait()


@pytest.mark.slow
def test_check_survives_an_output_encoding_without_check_marks(tmp_path):
    """Windows: `python check.py > report.txt` encodes with cp1252, which has no ✓/✗."""
    folder = _release_with(tmp_path, bug=True)
    env = {**_plain_env(), "PYTHONIOENCODING": "cp1252"}
    done = subprocess.run([sys.executable, "check.py", "ex1"], cwd=folder, env=env,
                          capture_output=True, timeout=300)
    assert done.returncode == 1, done.stderr.decode("cp1252", "replace")
    out = done.stdout.decode("cp1252")
    assert "public tests:" in out and "? scaled_dot_product_attention_np" in out
