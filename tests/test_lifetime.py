"""No process outlives its grader.

Each case starts ``python -m autograder grade`` for real, in its own session, on a submission
that hangs (at import, in a call, or after starting a daemon that detached with setsid and a
double fork and cleared its parent-death signal), waits for the chosen moment by polling for
the student's own process name (the student code sets it with prctl(PR_SET_NAME)), kills the
grader in one of the ways graders die, and then checks that nothing it started is left.

"Started by the grader" is recognised without trusting the code under test: every process
forked from the grader (zygote, workers, the student's children) keeps the grader's command
line, which holds a folder name unique to the case; at the root levels, anything of the
case's worker user counts too. The checks poll for up to ``GONE_WITHIN`` seconds.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import worker_user

from outside_python import outside_python

ROOT = Path(__file__).resolve().parents[1]
WORKER_USER = worker_user("life")             # a worker user of our own: uid-wide checks hit only our cases
NOBODY = 65534
GONE_WITHIN = 6.0                   # seconds for everything to end after the kill
SWEPT_WITHIN = 60.0                 # ... when the zygote first walks the file system (no Landlock):
                                    # 1-4 s here, more on a busy machine with cold caches
APPEAR_WITHIN = 90.0                # seconds for a grader to reach the wanted moment (busy machine)
STUDENT_TIMEOUT = 12.0              # batch --student-timeout: usually after the worker's start-up

if not sys.platform.startswith("linux"):
    pytest.skip("process lifetime is enforced with Linux facilities", allow_module_level=True)

# What ps shows for this process (/proc/self/comm is not writable after the privilege drop).
NAME = '__import__("ctypes").CDLL(None).prctl(15, {!r}, 0, 0, 0)\n'
HANG_AT_IMPORT = "import time\n" + NAME.format(b"hang-import") + "while True:\n    time.sleep(0.2)\n"
HANG_IN_CALL = "import time\n\n\ndef _hang(*args, **kwargs):\n    " + NAME.format(b"hang-call") + \
    "    while True:\n        time.sleep(0.2)\n\n\n" + "".join(
        f"{name} = _hang\n" for name in ("softmax", "scaled_dot_product_attention_np",
                                        "attention_backward_np", "numerical_gradient",
                                        "scaled_dot_product_attention"))
DAEMON_THEN_HANG = """\
import ctypes, os, time
if os.fork() == 0:                      # a daemon: own session, double fork, no parent-death signal
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)
        """ + NAME.format(b"hang-daemon") + """\
        while True:
            time.sleep(0.2)
    os._exit(0)
""" + NAME.format(b"hang-import") + "while True:\n    time.sleep(0.2)\n"

SUBMISSIONS = {"import": HANG_AT_IMPORT, "call": HANG_IN_CALL, "daemon": DAEMON_THEN_HANG}
MOMENTS = {          # what to wait for before the kill (comm names); () = kill at once
    "start": (),
    "zygote": ("ag-zygote",),
    "worker": ("ag-worker",),        # a worker exists; the student's import may not have begun
    "import": ("hang-import",),
    "call": ("hang-call",),
    "daemon": ("hang-daemon", "hang-import"),
}


# --------------------------------------------------------------------------- processes

def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _live_processes() -> list[tuple[int, int, str, bytes]]:
    """(pid, uid, comm, cmdline) of every process that is not a zombie."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _read(f"/proc/{entry}/stat").rsplit(b")", 1)[-1].split()
        if not stat or stat[0] in (b"Z", b"X"):
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
        except OSError:
            continue
        comm = _read(f"/proc/{entry}/comm").decode("utf-8", "replace").strip()
        out.append((int(entry), uid, comm, _read(f"/proc/{entry}/cmdline")))
    return out


def _ours(token: "str | BatchTree", uid: int | None) -> list[tuple[int, int, str]]:
    """Processes started for this case: the token in the command line, or the worker user;
    for a batch (whose command lines name no student: opaque job files), a ``BatchTree``."""
    if isinstance(token, BatchTree):
        return token.live()
    return [(pid, puid, comm) for pid, puid, comm, cmd in _live_processes()
            if token.encode() in cmd or (uid is not None and puid == uid)]


def _parent_and_start(pid: int) -> tuple[int, bytes]:
    """(ppid, start time) from /proc/PID/stat: fields 4 and 22, counted after the name."""
    fields = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
    return (int(fields[1]), fields[19]) if len(fields) > 19 else (0, b"")


class BatchTree:
    """A batch's processes: every descendant of the batch seen so far (pid and start time,
    so a reused pid is not mistaken for one), and every process the student's code named
    ``hang-*`` wherever it went (a daemon that escaped the tree is exactly the leak to find;
    only this module's cases name processes so, one at a time)."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.seen: set[tuple[int, bytes]] = set()

    def live(self) -> list[tuple[int, int, str]]:
        procs = _live_processes()
        stat = {pid: _parent_and_start(pid) for pid, _uid, _comm, _cmd in procs}      # read once
        tree = {self.root_pid}
        changed = True
        while changed:
            grown = {pid for pid, (ppid, _start) in stat.items() if ppid in tree} - tree
            changed = bool(grown)
            tree |= grown
        self.seen |= {(pid, stat[pid][1]) for pid in tree if pid in stat}
        return [(pid, puid, comm) for pid, puid, comm, _cmd in procs
                if comm.startswith("hang-") or (pid, stat[pid][1]) in self.seen]


def _workers(token: str, uid: int | None) -> list[tuple[int, int, str]]:
    """The case's worker processes: the worker user's, or (one user) those named by the
    sandbox or by the student's code."""
    return [(pid, puid, comm) for pid, puid, comm in _ours(token, uid)
            if puid == uid or comm == "ag-worker" or comm.startswith("hang-")]


def _wait_for(token: str, uid: int | None, names: tuple[str, ...], grader: subprocess.Popen) -> None:
    deadline = time.monotonic() + APPEAR_WITHIN
    while time.monotonic() < deadline:
        found = {comm for _pid, _uid, comm in _ours(token, uid)}
        if all(name in found for name in names):
            return
        if grader.poll() is not None:
            pytest.fail(f"the grader ended (code {grader.returncode}) before {names} appeared")
        time.sleep(0.02)
    pytest.fail(f"{names} did not appear within {APPEAR_WITHIN:g} s")


def _assert_all_gone(token: str, uid: int | None, what: str, within: float = GONE_WITHIN) -> None:
    deadline = time.monotonic() + within
    while (left := _ours(token, uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"{what}: still running {within:g} s after the kill: {left}"


def _assert_no_worker_home(case_dir: Path, what: str) -> None:
    """The workers' homes (``ag-worker-*`` in the case's TMPDIR) are gone with the grader:
    the zygote removes those the grader could not, once it has killed every descendant."""
    left = sorted(p.name for p in _case_tmp(case_dir).glob("ag-worker-*"))
    assert not left, f"{what}: the workers' homes were left behind: {left}"


def _kill_leftovers(token: str) -> None:
    """The test itself must not leak, whatever happened (the student code's ``hang-*`` too)."""
    strays = [(pid, uid, comm) for pid, uid, comm, _cmd in _live_processes() if comm.startswith("hang-")]
    for pid, _uid, _comm in _ours(token, None) + strays:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# --------------------------------------------------------------------------- set-up

@dataclass
class Level:
    name: str
    prefix: tuple[str, ...]             # command prefix that runs the grader at this level
    extra: tuple[str, ...]              # extra `grade` options
    uid: int | None                     # the worker user's uid (None: no separate user)
    owner: int                          # who must be able to write the case's folder
    python: str = sys.executable
    kit: Path = ROOT                    # the folder holding autograder/ and reference/


# The user level needs an interpreter the worker user can read: the kit's venv lives under
# a private /root here. tests/test_isolation_levels.py builds this one (torch, numpy, ...).
OUTSIDE_PYTHON = Path("/opt/agtest-venv/bin/python")


def _grade_help() -> str:
    return subprocess.run([sys.executable, "-m", "autograder", "grade", "-h"], cwd=ROOT,
                          capture_output=True, text=True, env=_env(ROOT)).stdout


def _env(kit: Path, tmp: Path | None = None) -> dict[str, str]:
    """The grader's environment; ``tmp``: its temporary folder (see :func:`case_dir`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "AG_"))}
    env.update(PYTHONPATH=str(kit), PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg",
               OMP_NUM_THREADS="1")
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return env


def _kit_copy(prefix: str):
    """A copy of the kit in a folder everyone may enter (as /autograder/source on Gradescope),
    open to everyone whatever the checkout's modes are."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    base.chmod(0o755)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("autograder", "reference"):
        shutil.copytree(ROOT / name, base / "source" / name, ignore=ignore)
    for folder, _dirs, files in os.walk(base / "source"):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return base


@pytest.fixture(scope="module")
def user_level_kit():
    """The user level's kit: it locks the kit against the worker user for good (as at image
    build time), so it gets a copy of its own."""
    base = _kit_copy("ag-life-kit-")
    yield base / "source"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def nobody_kit():
    """The kit a grader running as ``nobody`` reads (the checkout and its venv are under a
    private /root here; the user level's copy is locked)."""
    base = _kit_copy("ag-life-nobody-")
    yield base / "source"
    shutil.rmtree(base, ignore_errors=True)


def _worker_uid() -> int:
    from autograder.sandbox import users
    return users.ensure_user(WORKER_USER).uid


def _level(name: str, request: pytest.FixtureRequest) -> Level:
    if os.geteuid() != 0:
        if name != "unprivileged":
            pytest.skip(f"the {name} level needs root (the tests run as uid {os.geteuid()})")
        return Level(name, (), (), None, os.geteuid())
    if name == "namespaces":
        return Level(name, (), ("--worker-user", WORKER_USER), _worker_uid(), 0)
    if name == "user":
        if "--isolation" not in _grade_help():
            pytest.skip("`grade` has no --isolation option (the user level cannot be forced)")
        outside_python()
        return Level(name, (), ("--worker-user", WORKER_USER, "--isolation", "user"), _worker_uid(), 0,
                     str(OUTSIDE_PYTHON), request.getfixturevalue("user_level_kit"))
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to run the grader as an unprivileged user")
    outside_python()                   # nobody cannot reach this venv's interpreter under /root
    return Level(name, ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
                 (), None, NOBODY, str(OUTSIDE_PYTHON), request.getfixturevalue("nobody_kit"))


@pytest.fixture(scope="module", autouse=True)
def one_run_at_a_time():
    """Two runs of this module at once would share the worker user (and its uid-wide kills
    at the user level, and the uid-wide checks here): the second waits for the first."""
    with open(os.path.join(tempfile.gettempdir(), "ag-life-tests.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def case_dir():
    """A folder every level can read (tmp_path is private to root), removed afterwards, and
    beside it the case's temporary folder (:func:`_case_tmp`): a grader killed with SIGKILL
    cannot remove what it made there (its zygote removes its workers' homes, which the cases
    check, but a batch's private copies and the unprivileged level's matplotlib cache stay),
    so the case does, instead of leaving it in /tmp."""
    folder = Path(tempfile.mkdtemp(prefix=f"ag-life-{uuid.uuid4().hex[:8]}-"))
    folder.chmod(0o755)
    tmp = _case_tmp(folder)
    tmp.mkdir()
    tmp.chmod(0o1777)                               # sticky and open to all, as /tmp
    yield folder
    _kill_leftovers(folder.name)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)


def _case_tmp(folder: Path) -> Path:
    """The case's TMPDIR: beside the case folder, not in it (a batch hides its output folder,
    the case folder, from its workers, whose homes are made in TMPDIR)."""
    return folder.with_name(folder.name + ".tmp")


def _submission(folder: Path, kind: str, owner: int) -> tuple[Path, Path]:
    sub = folder / "submission"
    sub.mkdir(mode=0o755)
    (sub / "attention.py").write_text(SUBMISSIONS[kind])
    (sub / "attention.py").chmod(0o644)
    out = folder / "out"
    out.mkdir(mode=0o755)
    os.chown(out, owner, -1) if os.geteuid() == 0 else None
    return sub, out / "results.json"


def _start_grader(level: Level, sub: Path, results: Path, wrapper: tuple[str, ...] = ()) -> subprocess.Popen:
    cmd = [*wrapper, *level.prefix, level.python, "-m", "autograder", "grade", str(sub),
           "--exercises", "ex1", "--results", str(results), "--timeout", "120", *level.extra]
    # Started as a shell's background job would be (CI runners, `nohup … &`): with SIGINT
    # ignored, which Python keeps. The grader must be interruptible all the same.
    return subprocess.Popen(cmd, cwd=level.kit, env=_env(level.kit, _case_tmp(sub.parent)), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


def _kill(grader: subprocess.Popen, how: str) -> None:
    """Kill the grader the way ``how`` says; for ``timeout*`` the grader runs under timeout(1),
    and SIGALRM makes timeout act as if its time had run out (signal to the grader and to
    timeout's process group)."""
    if how == "SIGKILL-group":                   # an outer time limit, batch's last resort
        os.killpg(grader.pid, signal.SIGKILL)
    elif how == "SIGINT-group":                  # Ctrl-C, batch --student-timeout's first step
        os.killpg(grader.pid, signal.SIGINT)
    elif how == "SIGTERM":                       # kill <pid>: the grader process only
        os.kill(grader.pid, signal.SIGTERM)
    elif how == "SIGKILL":
        os.kill(grader.pid, signal.SIGKILL)
    elif how.startswith("timeout"):
        os.kill(grader.pid, signal.SIGALRM)
    else:
        raise ValueError(how)


def _wrapper(how: str) -> tuple[str, ...]:
    if how == "timeout":
        return ("timeout", "600")
    if how == "timeout-KILL":
        return ("timeout", "-s", "KILL", "600")
    return ()


# --------------------------------------------------------------------------- grade

# (level, submission, moment, how): each submission, moment and way of dying at least once at
# the root level with namespaces; a spread of them at the other levels (each case starts a real
# grader: a few seconds each).
CASES = [
    ("namespaces", "import", "start", "SIGKILL-group"),
    ("namespaces", "import", "zygote", "SIGTERM"),
    ("namespaces", "import", "worker", "SIGINT-group"),
    ("namespaces", "import", "import", "SIGKILL-group"),
    ("namespaces", "import", "import", "timeout"),
    ("namespaces", "call", "call", "SIGTERM"),
    ("namespaces", "call", "call", "timeout-KILL"),
    ("namespaces", "daemon", "daemon", "SIGKILL"),
    ("user", "import", "import", "SIGKILL-group"),
    ("user", "call", "call", "SIGTERM"),
    ("user", "daemon", "daemon", "timeout"),
    ("unprivileged", "import", "zygote", "SIGKILL-group"),
    ("unprivileged", "import", "import", "SIGTERM"),
    ("unprivileged", "call", "call", "timeout"),
    ("unprivileged", "daemon", "daemon", "SIGKILL-group"),
    ("unprivileged", "daemon", "daemon", "SIGINT-group"),
]


@pytest.mark.parametrize("level_name,kind,moment,how", CASES,
                         ids=["-".join(c) for c in CASES])
def test_nothing_outlives_the_grader(request, case_dir, level_name, kind, moment, how):
    level = _level(level_name, request)
    sub, results = _submission(case_dir, kind, level.owner)
    token = case_dir.name
    grader = _start_grader(level, sub, results, _wrapper(how))
    try:
        _wait_for(token, level.uid, MOMENTS[moment], grader)
        _kill(grader, how)
        grader.wait(timeout=30)
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.wait()
    _assert_all_gone(token, level.uid, f"{level_name}: {kind} killed by {how} at {moment}")
    _assert_no_worker_home(case_dir, f"{level_name}: {kind} killed by {how} at {moment}")
    if moment != "start":                        # the placeholder is written before anything
        assert results.is_file() and results.stat().st_size > 0


PLANT_THEN_HANG = """\
import os, time
for folder in ("/var/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, {name!r}), "w") as planted:
            planted.write("left by a worker user")
    except OSError:
        pass
""" + NAME.format(b"hang-import") + "while True:\n    time.sleep(0.2)\n"


@pytest.mark.parametrize("landlock_on", [True, False], ids=["landlock", "no-landlock"])
def test_a_killed_graders_worker_user_leaves_no_file(request, case_dir, landlock_on):
    """The user level, a grader SIGKILLed while its student's import hangs, after planting a
    file in the shared scratch folders: its zygote's backstop removes it. Without Landlock
    the worker said it ran unconfined, and the zygote sweeps every place the worker user may
    write; with it the plant is refused and the zygote does not walk the file system."""
    from autograder.sandbox import landlock
    if landlock_on and landlock.abi() < 1:
        pytest.skip("this kernel has no Landlock")
    level = _level("user", request)
    sub, results = _submission(case_dir, "import", level.owner)
    name = f"{case_dir.name}-planted"
    (sub / "attention.py").write_text(PLANT_THEN_HANG.format(name=name))
    planted = [Path(folder) / name for folder in ("/var/tmp", "/dev/shm")]
    env = {**_env(level.kit, _case_tmp(case_dir)), landlock.OFF_ENV: "1" if landlock_on else "0"}
    grader = subprocess.Popen([level.python, "-m", "autograder", "grade", str(sub), "--exercises", "ex1",
                               "--results", str(results), "--timeout", "120", *level.extra],
                              cwd=level.kit, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for(case_dir.name, level.uid, ("hang-import",), grader)
        if not landlock_on:
            assert any(path.exists() for path in planted), "the plant never happened: the case proves nothing"
        _kill(grader, "SIGKILL-group")
        grader.wait(timeout=30)
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.wait()
        _assert_all_gone(case_dir.name, level.uid, "user: planted, then killed by SIGKILL-group",
                         GONE_WITHIN if landlock_on else SWEPT_WITHIN)
        left = [str(path) for path in planted if path.exists()]
        for path in planted:
            path.unlink(missing_ok=True)
    assert not left, f"the worker user's files outlived its grader: {left}"


@pytest.mark.parametrize("level_name", ["namespaces", "unprivileged"])
def test_a_killed_zygote_takes_its_workers_along(request, case_dir, level_name):
    """The backstop: a worker dies with its parent even if the zygote cannot clean up."""
    level = _level(level_name, request)
    sub, results = _submission(case_dir, "import", level.owner)
    token = case_dir.name
    grader = _start_grader(level, sub, results)
    try:
        _wait_for(token, level.uid, ("hang-import",), grader)
        zygotes = [pid for pid, _uid, comm in _ours(token, None) if comm == "ag-zygote"]
        assert len(zygotes) == 1
        os.kill(zygotes[0], signal.SIGKILL)
        deadline = time.monotonic() + GONE_WITHIN
        while (left := _workers(token, level.uid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"the worker outlived its zygote: {left}"
    finally:
        os.killpg(grader.pid, signal.SIGKILL)
        grader.wait()
    _assert_all_gone(token, level.uid, "after the zygote was killed")


# --------------------------------------------------------------------------- batch

def _start_batch(folder: Path, student_timeout: float) -> tuple[subprocess.Popen, BatchTree]:
    subs = folder / "subs"
    (subs / "hanging").mkdir(parents=True)
    (subs / "hanging" / "attention.py").write_text(DAEMON_THEN_HANG)
    cmd = [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(folder / "grades.csv"),
           "--exercises", "ex1", "--jobs", "1", "--no-progress",
           "--student-timeout", f"{student_timeout:g}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(ROOT, _case_tmp(folder)), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    return proc, BatchTree(proc.pid)


@pytest.mark.skipif(os.geteuid() != 0, reason="batch's worker users need root")
def test_batch_student_timeout_leaves_nothing(case_dir):
    """The student's time runs out (while its import hangs, unless the machine is so busy that
    the grader is still starting): batch stops the grader (SIGINT, then SIGKILL to its group)
    and nothing of it may remain."""
    batch, token = _start_batch(case_dir, student_timeout=STUDENT_TIMEOUT)
    try:
        deadline = time.monotonic() + STUDENT_TIMEOUT + 60
        while batch.poll() is None and time.monotonic() < deadline:
            token.live()                     # remember the batch's processes while they run
            time.sleep(0.1)
        assert batch.wait(timeout=1) == 0
        assert token.seen, "no process of the batch was seen"
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.wait()
    _assert_all_gone(token, None, "batch --student-timeout")
    _assert_no_worker_home(case_dir, "batch --student-timeout")
    assert "timeout" in (case_dir / "grades.csv").read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="batch's worker users need root")
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_interrupted_batch_leaves_nothing(case_dir, how):
    batch, token = _start_batch(case_dir, student_timeout=600)
    try:
        _wait_for(token, None, MOMENTS["daemon"], batch)
        os.kill(batch.pid, getattr(signal, how))
        batch.wait(timeout=30)
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.wait()
    _assert_all_gone(token, None, f"batch killed with {how}")
    _assert_no_worker_home(case_dir, f"batch killed with {how}")
