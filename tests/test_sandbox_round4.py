"""Hostile input, round 4: guarantees by construction, not by list.

* banned operators are refused in every thread and process student code starts (threads,
  thread pools, ``_thread``, ``fork``, ``torch.jit``, ``torch.fx``), and the worker starts no
  other program (``execve`` refused): a fresh interpreter would have none of its guards;
* a worker writes nowhere that outlives it: with Landlock, nowhere but its own home; without,
  every place its user can write is found by a walk and swept after it (user level);
* each refusal as narrow as its reason: INET sockets inside the namespaces level's private
  network namespace reach nothing and are allowed; at the user level they are refused;
* one grader's sweep never touches another's worker: two graders started side by side with
  the same worker user get different ones (``users.claim``);
* a TA without root is protected: the landlock level confines the worker, run here as an
  ordinary user grading a class in which a submission attacks the TA's files and a local
  server (a Dask scheduler stands for it).
"""
from __future__ import annotations

import csv
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
import torch

from autograder.sandbox import (ModuleSource, Sandbox, SandboxConfig, StudentError, StudentModules, landlock,
                                limits, writable)
from helpers import ROOT, solution, stub_source, worker_user

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (worker users, another user)")
needs_landlock = pytest.mark.skipif(landlock.abi() < 1, reason="this kernel has no Landlock")
WORKER = worker_user("round4")
RUN_TIMEOUT = 400
TA = "ag-ta-test"                   # an ordinary user standing for a TA without root


# --------------------------------------------------------------------------- banned ops, every route

ROUTES = r'''
import _thread, concurrent.futures, os, subprocess, sys, threading, time
import torch

_NAME = "scaled_" + "dot_product_attention"          # computed: no static rule sees it


def _op(q):
    return getattr(torch.ops.aten, _NAME)(q, q, q)


def _outcome(work):
    try:
        work()
        return "computed"
    except BaseException as exc:
        return type(exc).__name__


def thread():
    q, out = torch.ones(1, 2, 4), []
    worker = threading.Thread(target=lambda: out.append(_outcome(lambda: _op(q))))
    worker.start()
    worker.join()
    return out[0]


def pool():
    q = torch.ones(1, 2, 4)
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        return executor.submit(_outcome, lambda: _op(q)).result()


def raw_thread():
    q, out = torch.ones(1, 2, 4), []
    _thread.start_new_thread(lambda: out.append(_outcome(lambda: _op(q))), ())
    for _ in range(200):
        if out:
            return out[0]
        time.sleep(0.01)
    return "no answer"


def _cells(function):
    out = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:
            pass
    return out


def _unpatched_starts():
    """The built-in thread start the worker patched, wherever plain reads or gc can find it:
    closure cells of the patched functions, the garbage collector's list, or a second copy of
    ``_thread`` made by the unpatched built-in-module maker found the same ways."""
    import _imp, gc, importlib.util
    found = _cells(threading._start_new_thread) + _cells(_thread.start_new_thread) + gc.get_objects()
    makers = [f for f in _cells(_imp.create_builtin) + found if type(f) is type(len)
              and getattr(f, "__name__", "") == "create_builtin" and f is not _imp.create_builtin]
    for make in makers:
        try:
            found.append(make(importlib.util.find_spec("_thread")).start_new_thread)
        except Exception:
            pass
    return [f for f in found if type(f) is type(len) and getattr(f, "__name__", "") in ("start_new_thread", "start_new")]


def unpatched_start():
    q, out = torch.ones(1, 2, 4), []
    starts = _unpatched_starts()
    if not starts:
        return "no unpatched start"
    starts[0](lambda: out.append(_outcome(lambda: _op(q))), ())
    for _ in range(200):
        if out:
            return out[0]
        time.sleep(0.01)
    return "no answer"


def key_excluded():
    q = torch.ones(1, 2, 4)
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.PreDispatch)
    for name in ("Python", "PythonTLSSnapshot", "PythonDispatcher"):
        if hasattr(torch._C.DispatchKey, name):
            keys = keys | torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, name))
    with torch._C._ExcludeDispatchKeyGuard(keys):
        return _outcome(lambda: _op(q))


def dispatch_disabled():
    q = torch.ones(1, 2, 4)
    op = getattr(torch.ops.aten, _NAME).default
    return _outcome(lambda: torch._C._disabled_torch_dispatch_impl(op, (), (q, q, q), {}))


def forked():
    q = torch.ones(1, 2, 4)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write_end, _outcome(lambda: _op(q)).encode())
        os._exit(0)
    os.waitpid(child, 0)
    return os.read(read_end, 100).decode()


def jit():
    @torch.jit.script
    def attend(q: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.scaled_dot_product_attention(q, q, q)
    return _outcome(lambda: attend(torch.ones(1, 2, 4)))


def fx():
    class Attend(torch.nn.Module):
        def forward(self, q):
            return torch.ops.aten.scaled_dot_product_attention(q, q, q)
    traced = torch.fx.symbolic_trace(Attend())
    return _outcome(lambda: traced(torch.ones(1, 2, 4)))


def program():
    return _outcome(lambda: subprocess.run([sys.executable, "-c", "print(1)"], check=True))


def memory_file():
    return _outcome(lambda: os.memfd_create("hidden"))


def kernel_state():
    """What a worker may leave in the kernel or take for itself: a key in a keyring (another
    worker finds it in /proc/keys), a user namespace of its own (mounts past every cap), in
    this process and in a forked child; and whether threads and forks still start."""
    import ctypes, errno as _errno
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr = {"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219}}[os.uname().machine]

    def errno_of(result):
        return "allowed" if result >= 0 else _errno.errorcode.get(ctypes.get_errno(), "?")

    out = {"add_key": errno_of(libc.syscall(nr["add_key"], b"user", b"ag-leak", b"x", 1, -3)),   # session keyring
           "keyctl": errno_of(libc.syscall(nr["keyctl"], 0, -3, 0, 0, 0))}                       # get its id
    new_user, new_ns = 0x10000000, 0x00020000
    out["unshare"] = errno_of(libc.unshare(new_user))
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write_end, errno_of(libc.unshare(new_user | new_ns)).encode())
        os._exit(0)
    os.waitpid(child, 0)
    out["unshare_in_child"] = os.read(read_end, 100).decode()
    ran = []
    worker = threading.Thread(target=lambda: ran.append(1))
    worker.start()
    worker.join()
    out["thread"] = bool(ran)
    return out
'''
ROUTE_NAMES = ("thread", "pool", "raw_thread", "unpatched_start", "key_excluded", "dispatch_disabled", "forked", "jit", "fx")


@pytest.fixture(scope="module")
def routes():
    """ex4's student file, whose exercise bans scaled_dot_product_attention in the whole file (ex5 bans
    it in AttentionClassifier only: tests/test_culprit.py), in a worker."""
    box = Sandbox([ModuleSource("causal", "causal.py", ROUTES)],
                  SandboxConfig(user=WORKER, call_timeout=60))
    box.start()
    yield box, StudentModules(box, ["causal"]).causal
    box.close()


@pytest.mark.parametrize("route", ROUTE_NAMES)
def test_banned_operator_is_refused_on_every_route(routes, route):
    """The op never computes: it is refused where it runs (the request fails when the refusal
    happened in this process, even if the student's code caught it)."""
    _, module = routes
    try:
        outcome = getattr(module, route)()
    except StudentError as exc:
        assert "BannedAPIError" in str(exc) and "forbids scaled_dot_product_attention" in str(exc), str(exc)
        return
    assert outcome != "computed", f"{route}: the banned operator ran"
    assert outcome in ("BannedAPIError", "RuntimeError", "no unpatched start"), outcome


def test_the_worker_leaves_nothing_in_the_kernel_and_takes_no_namespace(routes):
    """Keyrings and user namespaces are refused (seccomp), while threads and forks still start
    (clone3 refused with ENOSYS: the C library falls back to clone)."""
    box, module = routes
    assert box.level == "namespaces" or not IS_ROOT
    assert module.kernel_state() == {"add_key": "EPERM", "keyctl": "EPERM", "unshare": "EPERM",
                                     "unshare_in_child": "EPERM", "thread": True}


def test_the_worker_starts_no_program(routes):
    """execve is refused: every process student code starts is a fork of the guarded worker."""
    box, module = routes
    assert box.level == "namespaces" or not IS_ROOT
    assert module.program() == ("PermissionError" if IS_ROOT else "computed")


def test_the_worker_makes_no_memory_file(routes):
    """memfd_create is refused: a memory file's pages are charged to no process until mapped,
    so no memory limit sees them and the out-of-memory killer would pick another process
    (red team: 3 GB held past RLIMIT_DATA)."""
    box, module = routes
    assert module.memory_file() == ("PermissionError" if IS_ROOT else "computed")


@needs_root
@needs_landlock
def test_the_landlock_level_refuses_programs_and_the_op_in_threads():
    box = Sandbox([ModuleSource("causal", "causal.py", ROUTES)],
                  SandboxConfig(isolation="landlock", call_timeout=60))
    box.start()
    try:
        module = StudentModules(box, ["causal"]).causal
        assert box.level == "landlock"
        assert module.program() == "PermissionError"
        assert module.memory_file() == "PermissionError"
        with pytest.raises(StudentError, match="forbids scaled_dot_product_attention"):
            module.thread()
    finally:
        box.close()


ROOT_PROBE = '''
import os

def capabilities():
    with open("/proc/self/status") as status:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in status) if k in ("CapEff", "CapBnd", "Uid")}

def device_node():
    try:
        os.mknod(os.path.join(os.environ["HOME"], "disk"), 0o600 | 0o060000, os.makedev(8, 0))
        return "made"
    except OSError as exc:
        return type(exc).__name__

def read(path):
    try:
        with open(path, "rb") as handle:
            return len(handle.read())
    except OSError as exc:
        return type(exc).__name__
'''


@needs_root
@needs_landlock
def test_the_landlock_level_forced_on_a_root_grader_leaves_root_no_power():
    """``--isolation landlock`` as root (auto picks user or namespaces there) keeps uid 0 in the
    worker: it holds no capability, may not make a device node (a disk read through one would
    pass every file permission) and does not read the password hashes in /etc (red team)."""
    box = Sandbox([ModuleSource("probe", "probe.py", ROOT_PROBE)], SandboxConfig(isolation="landlock", call_timeout=60))
    box.start()
    try:
        probe = StudentModules(box, ["probe"]).probe
        assert box.level == "landlock"
        caps = probe.capabilities()
        assert caps["Uid"].split()[0] == "0", caps
        assert int(caps["CapEff"], 16) == 0 and int(caps["CapBnd"], 16) == 0, caps
        assert probe.device_node() == "PermissionError"
        assert probe.read("/etc/shadow") == "PermissionError"
        assert isinstance(probe.read("/etc/passwd"), int)            # what Python may need stays readable
    finally:
        box.close()


# --------------------------------------------------------------------------- sockets: as narrow as the reason

NETWORK_AT_IMPORT = '''

import socket as _socket
_probe = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)     # code written for offline machines:
try:                                                              # the socket outside the try,
    _probe.connect(("192.0.2.1", 9))                              # a failed connect ignored
except OSError:
    pass
_probe.close()
'''


@needs_root
def test_inet_sockets_are_allowed_inside_the_private_network_namespace(tmp_path):
    """An honest file that opens a UDP socket at import keeps full marks at the namespaces
    level (its private network namespace reaches nothing); at the user level the socket is
    refused (README: no socket but AF_UNIX there)."""
    from helpers import grade_folder, make_submission
    folder = make_submission(tmp_path, {"multihead.py": solution("ex3") + NETWORK_AT_IMPORT})
    outcome = grade_folder(folder, "ex3")
    assert outcome.isolation == "namespaces" and outcome.score == outcome.max_score, \
        [t.output[:200] for t in outcome.tests if not t.passed][:3]
    box = Sandbox([ModuleSource("probe", "probe.py", "import socket\n"
                                "def inet():\n"
                                "    try:\n"
                                "        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close(); return 'open'\n"
                                "    except OSError as exc:\n"
                                "        return exc.strerror\n")],
                  SandboxConfig(user=WORKER, isolation="landlock" if landlock.abi() >= 1 else "namespaces"))
    try:
        box.start()
        got = StudentModules(box, ["probe"]).probe.inet()
        assert got == ("Permission denied" if box.level == "landlock" else "open"), (box.level, got)
    finally:
        box.close()


# --------------------------------------------------------------------------- writes that outlive a worker

WALKER = r'''
import os


def write_everywhere():
    """Every directory this user may enter: where the kernel says it may write, try it."""
    wrote, stack, seen = [], ["/"], 0
    while stack and seen < 200000:
        folder = stack.pop()
        seen += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False) or entry.path in ("/proc", "/sys"):
                    continue
            except OSError:
                continue
            stack.append(entry.path)
            if os.access(entry.path, os.W_OK | os.X_OK):
                try:
                    with open(os.path.join(entry.path, "ag-round4-@TOKEN@"), "w") as handle:
                        handle.write("left behind")
                    wrote.append(entry.path)
                except OSError:
                    pass
    return sorted(wrote)
'''


@needs_root
@pytest.mark.parametrize("landlock_on", [True, False], ids=["landlock", "no-landlock"])
def test_worker_writes_nowhere_that_outlives_it(outside_python_path, kit_modes_kept, tmp_path, landlock_on):
    """User level (Gradescope's): the worker tries to write in every directory the kernel lets
    its user write. With Landlock it can write none outside its home; without, every place it
    wrote is one the sweep knows (writable.places) and nothing of it is left after grading."""
    if landlock_on and landlock.abi() < 1:
        pytest.skip("this kernel has no Landlock")
    token = uuid.uuid4().hex[:10]
    script = tmp_path / "walk.py"
    script.write_text(WALK_DRIVER)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8",
           landlock.OFF_ENV: "1" if landlock_on else "0"}
    done = subprocess.run([str(outside_python_path), str(script), WORKER, token,
                           WALKER.replace("@TOKEN@", token)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    home = report["home"]
    outside_home = [p for p in report["wrote"] if not (p == home or p.startswith(home + "/"))]
    if landlock_on:
        assert report["confined"] and not outside_home, outside_home
    else:
        assert not report["confined"]
        assert "/tmp" in outside_home                          # the walk did write somewhere
        # the grader's walk (at its start) knew every place the worker wrote, except places
        # another user made while it ran (other tests here): writable.py's stated limit
        unknown = sorted(set(outside_home) - set(report["places"]))
        made_later = [p for p in unknown if not os.path.exists(p) or os.stat(p).st_ctime >= report["walked_at"]]
        assert unknown == made_later, f"writable places the walk missed: {sorted(set(unknown) - set(made_later))}"
        for place in made_later:
            Path(place, f"ag-round4-{token}").unlink(missing_ok=True)
    left = [p for p in report["wrote"] if os.path.exists(os.path.join(p, f"ag-round4-{token}"))]
    assert not left, f"what the worker wrote outlived it: {left}"


WALK_DRIVER = r'''
import json, sys
from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules, users, writable
user, token, source = sys.argv[1:4]
import time
walked_at = time.time()                 # the user level walks the writable places as it starts
box = Sandbox([ModuleSource("walker", "walker.py", source + "\ndef home():\n    import os\n    return os.getcwd()\n")],
              SandboxConfig(user=user, isolation="user", call_timeout=120))
box.start()
walker = StudentModules(box, ["walker"]).walker
home, wrote = walker.home(), walker.write_everywhere()
confined = box.worker_ready.files_restricted
claimed = box.backend.ids
box.close()
print(json.dumps({"home": home, "wrote": wrote, "confined": confined,
                  "places": list(writable.places(claimed.uid, claimed.gid)), "walked_at": walked_at}))
'''


def test_writable_places_are_found_by_walking():
    """A world-writable folder anywhere, and the user's own, are found; a folder it cannot
    reach is not."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as base:
        deep = Path(base) / "a" / "b" / "shared"
        deep.mkdir(parents=True)
        deep.chmod(0o1777)
        Path(base).chmod(0o755)
        hidden = Path(base) / "closed"
        (hidden / "inside").mkdir(parents=True)
        (hidden / "inside").chmod(0o1777)
        hidden.chmod(0o700)
        writable.places.cache_clear()
        found = writable.places(65432, 65432, base)
        assert str(deep) in found and str(hidden / "inside") not in found


# --------------------------------------------------------------------------- graders side by side

SLOW_IMPORT = '''

import os as _os, time as _time
with open(_os.path.join("@PROOF@", "uid-" + str(_os.getpid())), "w") as _handle:
    _handle.write(str(_os.getuid()))
_time.sleep(4)                              # the two graders' workers overlap
'''


@needs_root
def test_two_graders_side_by_side_never_share_a_worker_user(tmp_path, outside_python_path, kit_modes_kept):
    """Two `grade` runs started together, both asked to use the same worker user: each gets
    one of its own (the user level's sweep kills every process of its user), both full marks."""
    proof = Path(tempfile.mkdtemp(prefix="ag-r4-proof-", dir="/var/tmp"))
    proof.chmod(0o1777)
    procs = []
    try:
        for i in range(2):
            sub = tmp_path / f"s{i}"
            sub.mkdir()
            (sub / "attention.py").write_text(solution("ex1") + SLOW_IMPORT.replace("@PROOF@", str(proof)))
            env = dict(os.environ, PYTHONPATH=str(ROOT), **{limits.SHARE_ENV: str(proof)})
            procs.append(subprocess.Popen(
                [str(outside_python_path), "-m", "autograder", "grade", str(sub), "--exercises", "ex1", "--results",
                 str(tmp_path / f"r{i}.json"), "--isolation", "user", "--worker-user", WORKER + "-pair"],
                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for proc in procs:
            proc.communicate(timeout=RUN_TIMEOUT)
        uids = {(proof / name).read_text() for name in os.listdir(proof)}
    finally:
        shutil.rmtree(proof, ignore_errors=True)
    for i in range(2):
        data = json.loads((tmp_path / f"r{i}.json").read_text())
        assert data["score"] == 20.0, data["output"]
    assert len(uids) == 2, f"both graders' workers ran as the same user: {uids}"
    names = {pwd.getpwuid(int(u)).pw_name for u in uids}
    assert names == {WORKER + "-pair", WORKER + "-pair-2"}, names


# --------------------------------------------------------------------------- a TA without root

ATTACK_TA = '''

import os as _os, signal as _signal, socket as _socket
_got = {}
for _label, _path in (("gradebook", "@HOME@/gradebook.csv"), ("new file", "@HOME@/pwned.txt"),
                      ("classmate", "@CLASS@/bob/attention.py")):
    try:
        with open(_path, "a" if _label != "classmate" else "r") as _handle:
            if _label == "classmate":
                _handle.read()
            else:
                _handle.write("hacked\\n")
        _got[_label] = "done"
    except OSError as _exc:
        _got[_label] = _exc.strerror
try:
    _socket.create_connection(("127.0.0.1", @PORT@), timeout=2).close()
    _got["scheduler"] = "connected"
except OSError as _exc:
    _got["scheduler"] = _exc.strerror
try:
    _os.kill(_os.getppid(), 0)
    _got["signal"] = "done"
except OSError as _exc:
    _got["signal"] = _exc.strerror
try:
    _got["home"] = str(len(_os.listdir("@HOME@")))
except OSError as _exc:
    _got["home"] = _exc.strerror
# a file's metadata, inode flags, watches and leases: Landlock does not govern them, and the TA
# owns these files (red team: a chmod 0 of the class, kit and output folders ended a TA's batch
# with no gradebook; an inotify watch on the class folder it may not list named every classmate)
import ctypes as _ctypes, fcntl as _fcntl


def _watch(folder):
    libc = _ctypes.CDLL(None, use_errno=True)
    queue = libc.inotify_init1(0)
    if queue < 0 or libc.inotify_add_watch(queue, folder.encode(), 0x100) < 0:      # IN_CREATE
        raise OSError(_ctypes.get_errno(), _os.strerror(_ctypes.get_errno()))


for _label, _change in (
        ("chmod gradebook", lambda: _os.chmod("@HOME@/gradebook.csv", 0)),
        ("chmod classmate", lambda: _os.chmod("@CLASS@/bob", 0o777)),
        ("chown gradebook", lambda: _os.chown("@HOME@/gradebook.csv", _os.getuid(), _os.getgid())),
        ("utime gradebook", lambda: _os.utime("@HOME@/gradebook.csv", (0, 0))),
        ("xattr gradebook", lambda: _os.setxattr("@HOME@/gradebook.csv", "user.ag", b"1")),
        ("fchmod own file", lambda: _os.fchmod(_os.open("mine", _os.O_CREAT | _os.O_WRONLY, 0o600), 0o777)),
        ("flags own file", lambda: _fcntl.ioctl(_os.open("mine", _os.O_RDONLY), 0x40086602, b"\\0" * 8)),
        ("lease own file", lambda: _fcntl.fcntl(_os.open("mine", _os.O_RDONLY), _fcntl.F_SETLEASE, _fcntl.F_RDLCK)),
        ("watch class", lambda: _watch("@CLASS@"))):
    try:
        _change()
        _got[_label] = "done"
    except OSError as _exc:
        _got[_label] = _exc.strerror


def report():
    return _got
'''


@pytest.fixture(scope="module")
def ta_home(outside_python_path):
    """An ordinary user with a home of their own holding a copy of the kit and a class."""
    try:
        pwd.getpwnam(TA)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", TA], check=True)
    home = Path(pwd.getpwnam(TA).pw_dir)
    work = home / f"round4-{uuid.uuid4().hex[:6]}"
    for name in ("autograder", "reference"):
        shutil.copytree(ROOT / name, work / "kit" / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (home / "gradebook.csv").write_text("student,score\n")
    os.chmod(home / "gradebook.csv", 0o644)             # whatever an earlier run left
    for student, text in (("ann", None), ("bob", solution("ex1"))):
        (work / "class" / student).mkdir(parents=True)
        if text:
            (work / "class" / student / "attention.py").write_text(text)
    subprocess.run(["chown", "-R", f"{TA}:{TA}", str(home)], check=True)
    os.chmod(home, 0o700)
    yield home, work
    shutil.rmtree(work, ignore_errors=True)


def _accept_all(server: socket.socket) -> None:
    while True:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        connection.close()


def _as_ta(cmd: list[str], cwd: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    home = Path(pwd.getpwnam(TA).pw_dir)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONPATH": str(cwd / "kit"), **(env_extra or {})}
    return subprocess.run(["setpriv", f"--reuid={TA}", f"--regid={TA}", "--init-groups", "--", *cmd],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)


@needs_root
@needs_landlock
def test_a_ta_without_root_keeps_their_files(ta_home, outside_python_path):
    """`grade` run by an ordinary user: the landlock level. The attacking submission keeps its
    honest points (the attack is not graded), writes nothing of the TA's, reads no classmate,
    reaches no local server, cannot signal the grader, changes no file's mode, owner, times,
    extended attributes or inode flags (not even its own file's, by descriptor), holds no lease
    and watches no folder it may not list."""
    home, work = ta_home
    gradebook = home / "gradebook.csv"
    kept = _metadata(gradebook, work / "class" / "bob")
    server = socket.create_server(("127.0.0.1", 0))        # stands for a Dask scheduler
    port = server.getsockname()[1]
    threading.Thread(target=_accept_all, args=(server,), daemon=True).start()
    attack = ATTACK_TA.replace("@HOME@", str(home)).replace("@CLASS@", str(work / "class"))
    (work / "class" / "ann" / "attention.py").write_text(
        solution("ex1") + attack.replace("@PORT@", str(port)))
    subprocess.run(["chown", "-R", f"{TA}:{TA}", str(work)], check=True)
    probe = ("import json, sys\n"
             "from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules\n"
             "source = open(sys.argv[1]).read()\n"
             "box = Sandbox([ModuleSource('attention', 'attention.py', source)],"
             " SandboxConfig(hide=[sys.argv[2], sys.argv[3]]))\n"
             "box.start(); print(box.level, json.dumps(StudentModules(box, ['attention']).attention.report()))\n"
             "box.close()\n")
    done = _as_ta([str(outside_python_path), "-c", probe, str(work / "class" / "ann" / "attention.py"),
                   str(work / "class"), str(work / "kit")], work)
    server.close()
    assert done.returncode == 0, done.stderr[-3000:]
    level, report = done.stdout.strip().splitlines()[-1].split(" ", 1)
    got = json.loads(report)
    assert level == "landlock", done.stderr[-2000:]
    assert got["gradebook"] == got["new file"] == got["classmate"] == got["home"] == "Permission denied", got
    assert got["scheduler"] == "Permission denied" and got["signal"] == "Operation not permitted", got
    assert {got[label] for label in FILE_ATTACKS} == {"Operation not permitted"}, got
    assert _metadata(gradebook, work / "class" / "bob") == kept
    assert (home / "gradebook.csv").read_text() == "student,score\n" and not (home / "pwned.txt").exists()
    graded = _as_ta([str(outside_python_path), "-m", "autograder", "grade", str(work / "class" / "ann"),
                     "--exercises", "ex1", "--results", str(work / "r.json")], work)
    data = json.loads((work / "r.json").read_text())
    assert data["extra_data"]["isolation"] == "landlock" and data["score"] == 20.0, graded.stderr[-2000:]
    assert (home / "gradebook.csv").read_text() == "student,score\n" and not (home / "pwned.txt").exists()
    assert _metadata(gradebook, work / "class" / "bob") == kept


FILE_ATTACKS = ("chmod gradebook", "chmod classmate", "chown gradebook", "utime gradebook",
                    "xattr gradebook", "fchmod own file", "flags own file", "lease own file", "watch class")


def _metadata(*paths: Path) -> dict:
    """What a worker must not change of ``paths``: mode, owner, extended attributes and a
    file's modification time (not a folder's, which the grader's own files move, nor the access
    time, which the test's own reads may move)."""
    def of(path: Path) -> tuple:
        info = os.stat(path)
        when = info.st_mtime_ns if stat.S_ISREG(info.st_mode) else None
        return info.st_mode, info.st_uid, info.st_gid, when, sorted(os.listxattr(path))
    return {path: of(path) for path in paths}


CLOSE_EVERYTHING = '''

import os as _os
for _path in @PATHS@:
    try:
        _os.chmod(_path, 0)
    except OSError:
        pass
'''


@needs_root
@needs_landlock
def test_a_submission_cannot_close_the_tas_folders_in_a_batch(ta_home, outside_python_path):
    """A TA's `batch` (the landlock level, two jobs): a submission that `chmod 0`s the class
    folder, its classmate's folder, the kit, the output folder and the TA's home (the red
    team's attack found them in the worker's memory; it ended the batch with no gradebook and
    left every one of them closed) changes no mode, and both students are graded."""
    home, work = ta_home
    out = work / "out"
    out.mkdir(exist_ok=True)
    folders = [work / "class", work / "class" / "bob", work / "kit" / "autograder", work / "kit" / "reference",
               out, home]
    attack = CLOSE_EVERYTHING.replace("@PATHS@", repr([str(p) for p in folders]))
    (work / "class" / "ann" / "attention.py").write_text(solution("ex1") + attack)
    subprocess.run(["chown", "-R", f"{TA}:{TA}", str(work)], check=True)
    kept = _metadata(*folders)
    done = _as_ta([str(outside_python_path), "-m", "autograder", "batch", str(work / "class"), "--jobs", "2",
                   "--out", str(out / "grades.csv"), "--exercises", "ex1", "--no-progress"], work)
    changed = {str(p): oct(os.stat(p).st_mode) for p, was in kept.items() if _metadata(p)[p] != was}
    for path in kept:                                # for the fixture's next tests, whatever happened
        os.chmod(path, kept[path][0] & 0o7777)
    assert not changed, (changed, done.stderr[-3000:])
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert {name: float(row["total"]) for name, row in rows.items()} == {"ann": 20.0, "bob": 20.0}, rows
    isolation = json.loads((out / "results" / "ann" / "results.json").read_text())["extra_data"]["isolation"]
    assert isolation == "landlock", done.stderr[-2000:]


@needs_root
def test_without_landlock_a_ta_is_told_loudly(ta_home, outside_python_path):
    """No Landlock (turned off here): the process level, and a warning that student code can
    touch the TA's files."""
    home, work = ta_home
    (work / "class" / "ann" / "attention.py").write_text(stub_source("ex1"))
    subprocess.run(["chown", "-R", f"{TA}:{TA}", str(work)], check=True)
    done = _as_ta([str(outside_python_path), "-m", "autograder", "grade", str(work / "class" / "ann"),
                   "--exercises", "ex1", "--results", str(work / "r0.json")], work, {landlock.OFF_ENV: "0"})
    assert "isolation: process" in done.stderr and "WARNING" in done.stderr, done.stderr[-2000:]
    assert "can read and write your files" in done.stderr


def test_landlock_keeps_the_import_roots_readable_inside_a_protected_folder(tmp_path):
    """A results file written into a checkout whose ``.venv`` holds the Python protects the
    checkout: its site-packages must stay readable (a student file's first ``import
    matplotlib.pyplot`` failed with PermissionError there), what else the folder holds must
    not, and neither must the kit installed inside site-packages (as the namespaces level)."""
    import sysconfig
    purelib = Path(os.path.realpath(sysconfig.get_path("purelib")))
    venv = Path(os.path.realpath(sys.prefix))
    if venv not in purelib.parents:
        pytest.skip("this Python's site-packages lies outside its prefix")
    kit = purelib / "autograder_kit_stand_in"
    readable = landlock.readable_paths([str(venv), str(kit)])

    def covered(path: Path) -> bool:
        return any(path == Path(r) or Path(r) in path.parents for r in readable)

    assert covered(purelib / "matplotlib" / "pyplot.py")
    assert not covered(venv / "pyvenv.cfg") and not covered(venv)
    assert not covered(kit / "grading.py")


# --------------------------------------------------------------------------- files on the grader's disk

DISK_FILLER = r'''
import os, time

def _deep_folder():
    """25 nested folders of 200-character names: a path far longer than PATH_MAX."""
    folder = os.open(os.environ["HOME"], os.O_RDONLY)
    for _ in range(25):
        os.mkdir("d" * 200, dir_fd=folder)
        inner = os.open("d" * 200, os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    return folder

def fill(files, mb, how):
    """``files`` files of ``mb`` MB in the home, written, deleted and held open, or in a
    folder deeper than any path can name."""
    held, deep = [], _deep_folder() if how == "deep" else None
    for i in range(files):
        if deep is not None:
            fd = os.open(f"fill{i}", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=deep)
            os.write(fd, b"x" * (mb << 20))
            os.close(fd)
            continue
        path = os.path.join(os.environ["HOME"], f"fill{i}")
        handle = open(path, "wb")
        handle.write(b"x" * (mb << 20))
        handle.flush()
        if how == "deleted_but_open":
            os.unlink(path)
            held.append(handle)
        else:
            handle.close()
    time.sleep(3)                       # the grader looks every quarter of a second
    return "kept"

def note():
    with open(os.path.join(os.environ["HOME"], "note.txt"), "w") as handle:
        handle.write("a small file is fine")
    return "ok"
'''


@needs_landlock
@pytest.mark.parametrize("how", ["files", "deleted_but_open", "deep"])
def test_a_worker_past_its_disk_cap_is_stopped_and_says_so(how):
    """At a level whose home is a folder on the grader's disk (here landlock), RLIMIT_FSIZE caps
    one file, not how many: the grader watches what the worker holds there (files in its home,
    however deep; files it holds open deleted) and stops it past ``disk_mb`` (red team: 3 GB
    in one call, again at every call; 600 MB below a path longer than PATH_MAX). The call
    fails saying why; the next runs in a fresh worker."""
    box = Sandbox([ModuleSource("filler", "filler.py", DISK_FILLER)],
                  SandboxConfig(isolation="landlock", call_timeout=60, disk_mb=16))
    box.start()
    try:
        module = StudentModules(box, ["filler"]).filler
        assert box.level == "landlock"
        assert module.note() == "ok"
        with pytest.raises(StudentError, match="wrote more than 16 MB of files"):
            module.fill(8, 4, how)
        assert module.note() == "ok"
    finally:
        box.close()


def test_the_disk_measure_reads_deep_and_closed_folders(tmp_path):
    """``diskwatch.held_bytes`` counts files below a path longer than PATH_MAX (120 folders of
    40-character names: no path is used, one folder descriptor at a time) and in folders
    closed to their owner (opened again), and stops past the limit. (A 3,000-deep tree at the
    user and process levels: tests/test_hostile_trees.py. This one is shallow enough for
    pytest's own clean-up and for other tests' walks of the temporary folders.)"""
    from autograder.sandbox import diskwatch
    home = tmp_path / "home"
    home.mkdir()
    folder = os.open(home, os.O_RDONLY)
    for _ in range(120):
        os.mkdir("d" * 40, dir_fd=folder)
        inner = os.open("d" * 40, os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    deep = os.open("deep.bin", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=folder)
    os.write(deep, b"x" * (3 << 20))
    os.close(deep)
    os.close(folder)
    closed = home / "closed"
    closed.mkdir()
    (closed / "shut.bin").write_bytes(b"y" * (2 << 20))
    closed.chmod(0)
    try:
        held = diskwatch.held_bytes(str(home), None, 1 << 40)
        assert held >= (5 << 20) + 120 * diskwatch.ENTRY_BYTES, held
        assert diskwatch.held_bytes(str(home), None, 1 << 20) > 1 << 20
    finally:
        closed.chmod(0o700)
        shutil.rmtree(home)


def test_files_that_vanish_while_counted_count_nothing(tmp_path, monkeypatch):
    """A file or folder removed between the listing and its stat or open (matplotlib writes its
    cache through a temporary file it renames) is gone, not unreadable: the count stays small.
    It counted as past any cap and stopped a worker that drew, with "your code wrote more than
    256 MB" (ci74, the process level)."""
    from autograder.sandbox import diskwatch
    home = tmp_path / "home"
    (home / "sub").mkdir(parents=True)
    (home / "kept.bin").write_bytes(b"k" * 4096)
    for name in ("tmp-file", "tmp-folder"):
        (home / name).mkdir() if name.endswith("folder") else (home / name).write_bytes(b"t")
    real_scandir = os.scandir

    def listing_then_removal(folder):
        entries = list(real_scandir(folder))
        for name in ("tmp-file", "tmp-folder"):            # removed right after being listed
            target = home / name
            if target.is_dir():
                target.rmdir()
            elif target.exists():
                target.unlink()
        return iter(entries)

    monkeypatch.setattr(diskwatch.os, "scandir", listing_then_removal)
    held = diskwatch.held_bytes(str(home), None, 256 << 20)
    assert held < 1 << 20, held
    assert held >= 4096 + 2 * diskwatch.ENTRY_BYTES


@pytest.mark.parametrize("case", ["plain", "bool_mask", "float_mask", "causal", "scale", "gqa", "unbatched"])
def test_the_backstops_attention_is_torchs(case):
    """Where a worker's ban allows scaled-dot-product attention (ex5 outside AttentionClassifier),
    the operator's replaced kernel computes it with plain operators: the same values as
    torch's own, for every argument the API takes."""
    from autograder.sandbox import opguard
    g = torch.Generator().manual_seed(7)
    heads, kv_heads = (4, 2) if case == "gqa" else (2, 2)
    shape = (3, 5) if case == "unbatched" else (2, heads, 3, 5)
    q = torch.randn(*shape, generator=g, dtype=torch.float64)
    kv_shape = (4, 5) if case == "unbatched" else (2, kv_heads, 4, 5)
    k, v = torch.randn(*kv_shape, generator=g, dtype=torch.float64), torch.randn(*kv_shape, generator=g, dtype=torch.float64)
    kwargs = {"bool_mask": {"attn_mask": torch.rand(3, 4, generator=g) > 0.3},
              "float_mask": {"attn_mask": torch.randn(3, 4, generator=g, dtype=torch.float64)},
              "causal": {"is_causal": True}, "scale": {"scale": 0.3}, "gqa": {"enable_gqa": True}}.get(case, {})
    if case == "bool_mask":
        kwargs["attn_mask"][:, 0] = True
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
    torch.testing.assert_close(opguard._sdpa(q, k, v, **kwargs), want)
    output, weights = opguard._sdpa_math(q, k, v, **kwargs)
    torch.testing.assert_close(output, want)
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))


def test_a_replys_tensors_are_read_without_their_own_attributes():
    """The reply's encoder reads a tensor through its class: methods set on the instance
    (``t.detach = partial(torch code)``, red team s24) never run after the call returned."""
    from autograder.sandbox import wire
    ran = []
    t = torch.arange(6.0).reshape(2, 3)
    for name in ("detach", "cpu", "contiguous", "numpy", "view", "to_dense", "resolve_conj", "is_conj"):
        setattr(t, name, lambda *a, _name=name, **k: ran.append(_name))
    encoder = wire.Encoder(to_ref=lambda obj: None)
    tree = encoder.encode([t])
    decoded = wire.Decoder(encoder.buffers, from_handle=lambda node: node).decode(tree)
    assert ran == [] and torch.equal(decoded[0], torch.arange(6.0).reshape(2, 3))
