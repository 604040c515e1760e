"""Hostile-input issue, round 3: IPC (item 7), sockets (8), private helpers (10), import roots (11).

Worker user ``ag-round3`` (no other test file uses it). Graded runs go through the real CLI;
the user level uses the Python outside ``/root`` (``outside_python``) on copies of the kit in
``/var/tmp``, so this checkout's permissions are never changed.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from autograder.sandbox import asuser, harden, ipc, isolation, levels, lifetime, limits, netfilter, users
from helpers import worker_user

ROOT = Path(__file__).resolve().parents[1]
WORKER = worker_user("round3")
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (a worker user)")
FAMILIES = {"AF_INET": 2, "AF_INET6": 10, "AF_VSOCK": 40, "AF_NETLINK": 16, "AF_PACKET": 17}
RUN_TIMEOUT = 400


def _in_child(work) -> bytes:
    """Run ``work()`` (returns bytes) in a forked child; its answer."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        answer = b"?"
        try:
            os.close(read_end)
            answer = work()
        finally:
            os.write(write_end, answer)
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return answer


# --------------------------------------------------------------------------- (8) the filter

@pytest.mark.parametrize("machine", sorted(netfilter._ARCHES))
@pytest.mark.parametrize("refuse_ipc", [False, True])
def test_filter_jumps_land_inside_the_program(machine, refuse_ipc):
    insns = netfilter.program(machine, refuse_ipc)
    for i, (code, jt, jf, _k) in enumerate(insns):
        if code in (0x15, 0x35):
            assert i + 1 + max(jt, jf) < len(insns)
    assert insns[-1] == (0x06, 0, 0, 0x7FFF0000)          # ends allowing: an allowlist on families
    assert netfilter.program("sparc64") is None


def _socket_probe(refuse_ipc: bool) -> bytes:
    installed = netfilter.block_network(refuse_ipc=refuse_ipc)
    got = {"installed": installed}
    for name, family in FAMILIES.items():
        try:
            socket.socket(family, socket.SOCK_DGRAM if family != 17 else socket.SOCK_RAW).close()
            got[name] = "open"
        except OSError as exc:
            got[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.sendall(b"x")
        got["unix_pair"] = b.recv(1).decode()
    except OSError as exc:
        got["unix_pair"] = str(exc)
    try:
        socket.socketpair(socket.AF_INET, socket.SOCK_STREAM)
        got["inet_pair"] = "open"
    except OSError as exc:
        got["inet_pair"] = errno.errorcode.get(exc.errno, str(exc.errno))
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(0, 4096, 0o1600)                   # IPC_PRIVATE, IPC_CREAT | 0600
    got["shmget"] = "ok" if shmid >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)
    return json.dumps(got).encode()


@pytest.mark.skipif(netfilter.program() is None, reason="no filter known for this machine")
@pytest.mark.parametrize("refuse_ipc", [False, True], ids=["namespaces-filter", "user-filter"])
def test_filter_refuses_every_family_but_unix(refuse_ipc):
    got = json.loads(_in_child(lambda: _socket_probe(refuse_ipc)))
    assert got["installed"] is True
    for name in FAMILIES:
        assert got[name] == "EACCES", (name, got)
    assert got["inet_pair"] == "EACCES"
    assert got["unix_pair"] == "x"
    assert got["shmget"] == ("EPERM" if refuse_ipc else "ok")


def _file_probe(folder: str) -> bytes:
    """Under the filter: a file's metadata, inode flags, watches and leases refused, what
    Python's own file handling uses (open, write, fcntl's F_GETFL, a tty query) left alone."""
    import fcntl
    installed = netfilter.block_network()
    path = os.path.join(folder, "mine")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.write(fd, b"x")
    libc = ctypes.CDLL(None, use_errno=True)

    def outcome(change) -> str:
        try:
            change()
            return "done"
        except OSError as exc:
            return errno.errorcode.get(exc.errno, str(exc.errno))

    def inotify() -> None:
        if libc.inotify_init1(0) < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")

    got = {"installed": installed,
           "chmod": outcome(lambda: os.chmod(path, 0o644)), "fchmod": outcome(lambda: os.fchmod(fd, 0o644)),
           "utime": outcome(lambda: os.utime(path, (0, 0))),
           "setxattr": outcome(lambda: os.setxattr(path, "user.ag", b"1")),
           "setflags": outcome(lambda: fcntl.ioctl(fd, 0x40086602, b"\0" * 8)),
           "lease": outcome(lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)),
           "inotify": outcome(inotify),
           "getfl": outcome(lambda: fcntl.fcntl(fd, fcntl.F_GETFL)),
           "tty": outcome(lambda: fcntl.ioctl(fd, 0x5401, b"\0" * 64)),     # TCGETS: the kernel answers
           "read": outcome(lambda: os.pread(fd, 1, 0))}
    return json.dumps(got).encode()


@pytest.mark.skipif(netfilter.program() is None, reason="no filter known for this machine")
def test_filter_refuses_metadata_watches_and_leases(tmp_path):
    """Landlock governs a file's contents, not its mode, owner, times, xattrs or inode flags,
    nor watches and leases on it: the filter refuses those (by path and by descriptor, on the
    worker's own file too), and nothing Python's own file handling needs."""
    got = json.loads(_in_child(lambda: _file_probe(str(tmp_path))))
    assert got["installed"] is True
    refused = ("chmod", "fchmod", "utime", "setxattr", "setflags", "lease", "inotify")
    assert {name: got[name] for name in refused} == {name: "EPERM" for name in refused}, got
    assert got["getfl"] == got["read"] == "done" and got["tty"] == "ENOTTY", got     # reached the kernel
    assert os.stat(tmp_path / "mine").st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- (7) IPC: sweep

def _shm_rows(uid: int) -> list[tuple[str, int]]:
    return ipc.owned_objects(uid)


@needs_root
def test_sweep_removes_what_the_worker_user_left_in_the_kernel():
    worker = users.ensure_user(WORKER)
    uid, gid = worker.uid, worker.gid

    def leave_objects() -> bytes:
        libc = ctypes.CDLL(None, use_errno=True)
        made = [libc.shmget(0, 1 << 20, 0o1600), libc.semget(0, 1, 0o1600), libc.msgget(0, 0o1600)]
        return json.dumps(made).encode()

    made = json.loads(asuser.run_as_user(uid, gid, leave_objects))
    assert all(i >= 0 for i in made), made
    assert {kind for kind, _ in _shm_rows(uid)} == {"shm", "sem", "msg"}
    isolation.UserLevel().sweep(worker, None, confined=True)
    assert _shm_rows(uid) == []


def test_ipc_namespace_limits_are_bounded():
    settings = ipc.limits_for(64)
    assert int(settings["shmmax"]) == 64 << 20
    assert int(settings["shmall"]) * os.sysconf("SC_PAGE_SIZE") == 64 << 20
    assert settings["shm_rmid_forced"] == "1"


# --------------------------------------------------------------------------- (7, 8) graded runs

PROBE = r'''

# ---- probe (appended to a correct solution): IPC and sockets from student code
def _probe():
    import ctypes as _c, errno as _e, json as _j, socket as _s
    proof = "@PROOF@"
    libc = _c.CDLL(None, use_errno=True)
    libc.shmat.restype = _c.c_void_p
    got = {}
    def err():
        return _e.errorcode.get(_c.get_errno(), "?")
    for label, size in (("small", 8 << 20), ("big", 100 << 20)):
        shmid = libc.shmget(0, _c.c_size_t(size), 0o1600)
        if shmid < 0:
            got[label] = err()
            continue
        addr = libc.shmat(shmid, None, 0)
        if addr in (None, _c.c_void_p(-1).value):
            got[label] = "shmat " + err()
            continue
        _c.memset(addr, 1, size)
        libc.shmdt(_c.c_void_p(addr))
        got[label] = "made"
    for name, family in @FAMILIES@.items():
        try:
            _s.socket(family, _s.SOCK_DGRAM if family != 17 else _s.SOCK_RAW).close()
            got[name] = "open"
        except OSError as exc:
            got[name] = _e.errorcode.get(exc.errno, str(exc.errno))
    a, b = _s.socketpair(_s.AF_UNIX, _s.SOCK_STREAM)
    a.sendall(b"y")
    got["unix_pair"] = b.recv(1).decode()
    with open(proof + "/probe.json", "w") as handle:
        _j.dump(got, handle)


_probe()
'''


@pytest.fixture(scope="module")
def agtest_python() -> Path:
    from outside_python import outside_python
    return outside_python()


@pytest.fixture(scope="module")
def kit(agtest_python) -> Path:
    """A copy of the kit in a folder everyone may enter (as /autograder/source is)."""
    base = Path(tempfile.mkdtemp(prefix="ag-r3-kit-", dir="/var/tmp"))
    base.chmod(0o755)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("autograder", "reference"):
        shutil.copytree(ROOT / name, base / "source" / name, ignore=ignore)
    (base / "source").chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _grade(python: Path, cwd: Path, submission: Path, results: Path, level: str,
           exercises: str | None = None, share: str = "", pythonpath: str = "") -> tuple[dict, str]:
    cmd = [str(python), "-m", "autograder", "grade", str(submission), "--results", str(results),
           "--isolation", level, "--worker-user", WORKER]
    if exercises:
        cmd += ["--exercises", exercises]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/root",
           "PYTHONPATH": pythonpath, limits.SHARE_ENV: share,
           limits.METADATA_ENV: "/nonexistent/metadata.json"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert results.exists(), proc.stderr[-3000:]
    return json.loads(results.read_text()), proc.stderr


@needs_root
@pytest.mark.parametrize("level", ["namespaces", "user"])
def test_student_ipc_and_sockets(kit, agtest_python, level):
    """(7) a SysV segment made, touched and detached by student code is gone after grading,
    and a segment beyond the cap is refused; (8) every socket family but AF_UNIX fails, but for
    INET and INET6 inside the namespaces level's private network namespace (nothing to reach)."""
    uid = pwd.getpwnam(WORKER).pw_uid if _user_exists() else users.ensure_user(WORKER).uid
    token = uuid.uuid4().hex[:8]
    proof = Path(f"/var/tmp/ag-r3-proof-{token}")
    proof.mkdir(mode=0o1777)
    proof.chmod(0o1777)
    run = kit / f"run-{token}"
    (run / "submission").mkdir(parents=True)
    code = PROBE.replace("@PROOF@", str(proof)).replace("@FAMILIES@", repr(FAMILIES))
    (run / "submission" / "attention.py").write_text(
        (ROOT / "solutions" / "ex1_attention" / "attention.py").read_text() + code)
    for folder in (run, run / "submission"):
        folder.chmod(0o755)
    try:
        data, err = _grade(agtest_python, kit / "source", run / "submission", run / "results.json",
                           level, "ex1", share=str(proof), pythonpath=str(kit / "source"))
        got = json.loads((proof / "probe.json").read_text())
    finally:
        shutil.rmtree(proof, ignore_errors=True)
    assert data["extra_data"]["isolation"] == level, err[-2000:]
    assert data["score"] == 20.0, data["output"]
    assert ipc.owned_objects(uid) == [], f"{level}: IPC objects outlived the worker"
    if level == "namespaces":               # a private, capped namespace: allowed, bounded
        assert got["small"] == "made", got
        assert got["big"] == "EINVAL", got
    else:                                   # no namespace: refused by the filter
        assert got["small"] == got["big"] == "EPERM", got
    for name in FAMILIES:
        inside = level == "namespaces" and name in ("AF_INET", "AF_INET6")   # a private network namespace
        assert got[name] == ("open" if inside else "EACCES"), (level, name, got)
    assert got["unix_pair"] == "y"


def _user_exists() -> bool:
    try:
        pwd.getpwnam(WORKER)
        return True
    except KeyError:
        return False


# --------------------------------------------------------------------------- (10) private helpers

def _emulate_suid_dumpable(monkeypatch) -> None:
    """Make every change of the effective uid leave the process dumpable, as the kernel does
    when ``fs.suid_dumpable`` is 1 (without changing that machine-wide setting)."""
    real_setresuid, real_setuid = os.setresuid, os.setuid

    def after(before: int) -> None:
        if os.geteuid() != before:
            asuser._prctl(asuser.PR_SET_DUMPABLE, 1)

    def setresuid(r, e, s):
        before = os.geteuid()
        real_setresuid(r, e, s)
        after(before)

    def setuid(u):
        before = os.geteuid()
        real_setuid(u)
        after(before)

    monkeypatch.setattr(os, "setresuid", setresuid)
    monkeypatch.setattr(os, "setuid", setuid)


@needs_root
def test_helper_is_not_dumpable_and_its_proc_is_roots(monkeypatch):
    ids = users.ensure_user(WORKER); uid, gid = ids.uid, ids.gid
    _emulate_suid_dumpable(monkeypatch)

    def report() -> bytes:
        me = os.getpid()
        return json.dumps({"dumpable": asuser.dumpable(), "ids": os.getresuid(),
                           "proc_owner": [os.stat(f"/proc/{me}/{n}").st_uid for n in ("mem", "status")]}).encode()

    got = json.loads(asuser.run_as_user(uid, gid, report))
    assert got["ids"] == [uid, uid, uid]
    assert got["dumpable"] == 0
    assert got["proc_owner"] == [0, 0]       # /proc/<pid>/* of a non-dumpable process are root's


@needs_root
def test_every_helper_of_the_grader_drops_privately(monkeypatch, tmp_path):
    """harden's probe, the user level's kill and batch's readability probe each report, from
    inside the helper, that it is not dumpable even where the kernel would make it so."""
    from autograder import jobs
    ids = users.ensure_user(WORKER); uid, gid = ids.uid, ids.gid
    _emulate_suid_dumpable(monkeypatch)
    read_end, write_end = os.pipe()

    def note() -> None:
        if os.getuid() == uid:
            os.write(write_end, b"%d" % asuser.dumpable())

    real_access, real_kill, real_can_read = os.access, os.kill, jobs._can_read
    monkeypatch.setattr(os, "access", lambda *a, **k: (note(), real_access(*a, **k))[1])
    monkeypatch.setattr(os, "kill", lambda *a, **k: (note(), real_kill(*a, **k))[1])
    monkeypatch.setattr(jobs, "_can_read", lambda p: (note(), real_can_read(p))[1])
    harden.access_as([str(tmp_path)], uid, gid)
    lifetime.kill_all_of_user(uid, gid)
    jobs.readable_by(WORKER, [tmp_path])
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        notes = pipe.read()
    assert notes and set(notes) == {ord("0")}, notes


@needs_root
def test_spawned_worker_as_root_is_refused_unless_process_is_forced(monkeypatch, capsys):
    from autograder.sandbox import Sandbox, SandboxConfig
    from autograder.sandbox.errors import SandboxStartError
    monkeypatch.setenv("AUTOGRADER_WORKER_START", "spawn")
    monkeypatch.delenv(levels.ENV_VAR, raising=False)
    # announcements are once per process: start as a fresh grader process would (another
    # test file in this pytest worker, e.g. test_banned_ops, may have announced it already)
    monkeypatch.setattr(levels, "_announced", set())
    with pytest.raises(SandboxStartError, match="as root"):
        Sandbox([], SandboxConfig(user=WORKER))
    box = Sandbox([], SandboxConfig(user=WORKER, isolation="process"))
    assert box.level == "process" and "AS ROOT" in box.backend.why
    assert "AS ROOT" in capsys.readouterr().err


# --------------------------------------------------------------------------- (11) import roots

READ_KIT = r'''

# ---- probe (appended to a correct solution): can student code read the kit?
def _read_kit():
    import json as _j, os as _o
    got = {}
    for label, path in @TARGETS@.items():
        try:
            if _o.path.isdir(path):
                names = sorted(_o.listdir(path))
                got[label] = "listed %d" % len([n for n in names if n != ".venv"])
            else:
                with open(path, "rb") as handle:
                    got[label] = "read %d" % len(handle.read())
        except OSError as exc:
            got[label] = "denied " + type(exc).__name__
    with open("@PROOF@/kit.json", "w") as handle:
        _j.dump(got, handle)


_read_kit()
'''


def _checkout_copy(base: Path, venv: Path) -> Path:
    """A kit checkout (autograder, reference, solutions) whose ``.venv`` links to ``venv``."""
    co = base / "checkout"
    co.mkdir(mode=0o755)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("autograder", "reference", "solutions"):
        shutil.copytree(ROOT / name, co / name, ignore=ignore)
    os.symlink(venv, co / ".venv")
    return co


def _solutions_with_probe(dest: Path, co: Path, proof: Path) -> Path:
    shutil.copytree(ROOT / "solutions", dest, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
    targets = {"kit": str(co / "autograder"), "suite": str(co / "autograder" / "suites"),
               "reference": str(co / "reference" / "attention.py"), "checkout": str(co)}
    attention = dest / "ex1_attention" / "attention.py"
    attention.write_text(attention.read_text() + READ_KIT.replace("@TARGETS@", repr(targets))
                         .replace("@PROOF@", str(proof)))
    for folder, dirs, _files in os.walk(dest):
        os.chmod(folder, 0o755)
    return dest


def _full_marks_and_no_kit(data: dict, err: str, level: str, proof: Path) -> None:
    """Full marks; the kit unreadable (the checkout may show its ``.venv``: imports need it)."""
    assert data["extra_data"]["isolation"] == level, err[-2000:]
    assert data["score"] == 100.0, data["output"]
    loot = json.loads((proof / "kit.json").read_text())
    for label, outcome in loot.items():
        assert not outcome.startswith(("read", "listed")) or outcome.endswith(" 0"), (label, outcome)


@needs_root
@pytest.mark.parametrize("level", ["namespaces", "user"])
def test_results_in_checkout_with_linked_venv(agtest_python, level):
    """``grade --results`` in the checkout root (cwd = checkout), run by ``.venv/bin/python``
    where ``.venv`` links to a venv elsewhere: full marks, and the kit stays unreadable."""
    venv = (ROOT / ".venv") if level == "namespaces" else agtest_python.parents[1]
    base = Path(tempfile.mkdtemp(prefix="ag-r3-co-", dir="/var/tmp"))
    base.chmod(0o755)
    proof = base / "proof"
    proof.mkdir(mode=0o1777)
    proof.chmod(0o1777)
    try:
        co = _checkout_copy(base, venv)
        sub = _solutions_with_probe(base / "submission", co, proof)
        data, err = _grade(co / ".venv" / "bin" / "python", co, sub, co / "results.json", level,
                           share=str(proof), pythonpath=str(co))
        _full_marks_and_no_kit(data, err, level, proof)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_root
def test_results_in_this_checkout_at_namespaces_level(tmp_path):
    """The reported case itself: this checkout, its own .venv, results.json next to it."""
    proof = Path(tempfile.mkdtemp(prefix="ag-r3-proof-", dir="/var/tmp"))
    proof.chmod(0o1777)
    results = ROOT / f"results-r3-{uuid.uuid4().hex[:8]}.json"
    try:
        sub = _solutions_with_probe(tmp_path / "submission", ROOT, proof)
        data, err = _grade(ROOT / ".venv" / "bin" / "python", ROOT, sub, results, "namespaces",
                           share=str(proof))
        _full_marks_and_no_kit(data, err, "namespaces", proof)
    finally:
        results.unlink(missing_ok=True)
        shutil.rmtree(proof, ignore_errors=True)



IMPORTS_FROM_A_PRIVATE_FOLDER = """
import agprivate_pkg


def outcome(path):
    try:
        with open(path) as f:
            return "read " + f.read()
    except OSError as exc:
        return type(exc).__name__


def check():
    return agprivate_pkg.VALUE, outcome(agprivate_pkg.SECRET)
"""

PRIVATE_FOLDER_RUN = """
import json, sys
from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules, allowlist
if sys.argv[3] == "hidden":                    # no root of its own: the hide-by-mounts path
    def refuse(*args, **kwargs):
        raise PermissionError(1, "bind mounts refused (simulated)")
    allowlist.build = refuse
box = Sandbox([ModuleSource("mod", "mod.py", sys.argv[1])], SandboxConfig(user=sys.argv[2], call_timeout=60))
box.start()
try:
    check = list(StudentModules(box, ["mod"]).mod.check())
    print(json.dumps({"level": box.level, "root": box.worker_root, "check": check}))
finally:
    box.close()
"""


@needs_root
@pytest.mark.parametrize("root", ["pivot_root", "hidden"])
def test_an_import_path_in_a_folder_only_root_may_enter(root):
    """A ``sys.path`` entry of mode 0700 (a checkout made by ``mktemp -d``, holding the
    ``.venv``) is rebuilt in the worker's root as a folder it may enter: the package in it
    imports, while a private file beside it (mode 0600) stays unreadable; the same where no
    root of its own can be built (``hidden``). It once killed the worker at its first lazy
    import, reported as running out of memory."""
    base = Path(tempfile.mkdtemp(prefix="ag-private-"))               # mode 0700, root's
    try:
        (base / "agprivate_pkg").mkdir(mode=0o755)
        (base / "secret.txt").write_text("root only")
        (base / "secret.txt").chmod(0o600)
        (base / "agprivate_pkg" / "__init__.py").write_text(
            f"VALUE = 42\nSECRET = {str(base / 'secret.txt')!r}\n")
        assert base.stat().st_mode & 0o777 == 0o700
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(base), str(ROOT)])}
        run = subprocess.run([sys.executable, "-c", PRIVATE_FOLDER_RUN, IMPORTS_FROM_A_PRIVATE_FOLDER, WORKER, root],
                             env=env, capture_output=True, text=True, timeout=120, cwd=base)
        assert run.returncode == 0, run.stderr[-3000:]
        out = json.loads(run.stdout.strip().splitlines()[-1])
        assert out == {"level": "namespaces", "root": root, "check": [42, "PermissionError"]}, out
    finally:
        shutil.rmtree(base, ignore_errors=True)
