"""The fork server ("zygote") and the worker's start-up.

The zygote is forked from the grading process right after numpy, torch and matplotlib are
imported and before any hidden test or reference module is, so every worker starts in
milliseconds with those libraries already loaded (pages shared copy-on-write) and with
nothing in memory worth stealing. The zygote only forks and reaps; student code never runs
in it, and the worker closes the zygote's control socket before doing anything else.

Worker start-up (root):   zygote -> A (new namespaces, hides folders) -> B (pid 1 of its pid
namespace, drops to the worker user, rlimits, serves). Killing B kills everything the
student started. A waits for B and exits with B's status. Without root, B is forked
directly and isolation is by process only.

Lifetime (lifetime.py): the zygote (``ag-zygote`` in ps) runs in its own process group as a
child subreaper and kills everything it started when the grader goes, however it goes
(parent-death signal, EOF on the control socket, SIGTERM); workers (``ag-worker``) die with
their parent.
"""
from __future__ import annotations

import atexit
import dataclasses
import gc
import json
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass

from autograder.jsontypes import JSONObject
from autograder.sandbox import backends, diskwatch, isolation, lazy_dynamo, lifetime, limits, protocol, users, wire
from autograder.sandbox.errors import SandboxStartError, WorkerCrashed
from autograder.sandbox.output import OutputCollector
from autograder.sandbox.users import WorkerIds

_CTRL_MAX = 1 << 16


@dataclass(frozen=True)
class WorkerSpec:
    """What the zygote needs to start one worker: its limits, its home folder, its isolation
    level and (levels with a worker user) the user's ids."""
    config: limits.SandboxConfig
    home: str
    level: str
    ids: WorkerIds | None = None

    def to_json(self) -> JSONObject:
        return {"limits": dataclasses.asdict(self.config), "home": self.home, "level": self.level,
                "ids": dataclasses.asdict(self.ids) if self.ids else None}

    @classmethod
    def from_json(cls, data: JSONObject) -> "WorkerSpec":
        ids = data.get("ids")
        return cls(limits.SandboxConfig(**data["limits"]), data["home"], data["level"],
                   WorkerIds(**ids) if ids else None)


class ForkServer:
    """Grader-side handle to the zygote process."""

    def __init__(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        # Objects that exist now are never collected, in the children nor here: the garbage
        # collector then does not walk (and so copy) every page of torch's and numpy's objects
        # in any of them, which keeps those pages shared by the grader, the zygote and its
        # workers (they are modules and their objects, alive for the process's lifetime).
        lifetime.die_with_batch()                       # a grader of a killed batch ends
        grader = os.getpid()
        lazy_dynamo.install()                           # before freezing: see lazy_dynamo
        gc.freeze()                                     # (no collection first: see _freeze)
        pid = os.fork()
        if pid == 0:                                    # the zygote
            try:
                lifetime.start_zygote(grader)           # ends, with all it started, when we do
                parent.close()
                _zygote_main(child)
            finally:
                lifetime.shutdown()
        child.close()
        self.pid = pid
        self._ctrl = parent
        self._pending = 0                               # replies not read yet (warm_up)
        self._warmed: set[str] = set()

    def warm_up(self, parts: tuple[str, ...]) -> None:
        """Ask the zygote to load what student calls will need (``worker.WARM_UPS``) before it
        forks the next worker; the grader goes on meanwhile (the reply is read later)."""
        parts = tuple(p for p in dict.fromkeys(parts) if p not in self._warmed)
        if not parts:
            return
        self._warmed.update(parts)
        self._ctrl.sendall(json.dumps({"op": "warm", "parts": list(parts)}).encode())
        self._pending += 1

    def spawn(self, fds: list[int], spec: WorkerSpec) -> int:
        socket.send_fds(self._ctrl, [json.dumps({"op": "spawn", "spec": spec.to_json()}).encode()], fds)
        return self._reply()["pid"]

    def reap(self, pid: int, timeout: float = 5.0) -> int | None:
        """Wait for a worker leader; its raw wait status, or None if it did not end in time
        or the zygote is gone (its workers die with it: see ``lifetime``)."""
        try:
            self._ctrl.sendall(json.dumps({"op": "reap", "pid": pid, "timeout": timeout}).encode())
            return self._reply()["status"]
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        """End the zygote. The grader swept after each of its workers: the zygote's own sweep
        (the backstop for a grader that dies) is not needed, and it says so first."""
        try:
            self._ctrl.sendall(b'{"op": "done"}')
        except OSError:
            pass
        try:
            self._ctrl.close()
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def _reply(self) -> dict:
        while self._pending:                            # earlier warm-ups answer first
            self._pending -= 1
            json.loads(self._ctrl.recv(_CTRL_MAX))
        return json.loads(self._ctrl.recv(_CTRL_MAX))


_shared: ForkServer | None = None
_shared_owner = 0


def shared() -> ForkServer:
    """This process's zygote: started on first use, kept until the process exits.

    One zygote per process, started early: forking again later would copy whatever the
    grader has loaded by then (hidden suites, reference modules, expected values) and a torch
    whose thread pool is running (threads do not survive ``fork``; a worker that uses the
    pool would wait forever). Long-lived processes that grade repeatedly (the kit's own
    tests) start it before importing anything else; see ``tests/conftest.py``.
    """
    global _shared, _shared_owner
    if _shared is None or _shared_owner != os.getpid() or not _shared.alive():
        _shared, _shared_owner = ForkServer(), os.getpid()
        atexit.register(_shared.close)
    return _shared


# --------------------------------------------------------------------------- grader side: forked workers

class _DeadlineSocket:
    """Socket reads that respect one overall deadline (a slow drip cannot stretch a call)."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def recv(self, size: int) -> bytes:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv(size)
        except socket.timeout:
            raise TimeoutError from None


START_TIMEOUT = 30.0


class ForkedWorker(backends.Worker):
    """One sandboxed worker, forked by the zygote."""

    def __init__(self, zygote: ForkServer, config: limits.SandboxConfig, level: isolation.Level,
                 ids: WorkerIds | None):
        self.config, self.level, self.ids = config, level, ids
        self.home = tempfile.mkdtemp(prefix="ag-worker-")
        level.prepare_home(self.home, ids)
        self._sock, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        self._zygote = zygote
        self.leader = zygote.spawn([theirs.fileno(), out_w], WorkerSpec(config, self.home, level.name, ids))
        theirs.close()
        os.close(out_w)
        self._output = OutputCollector(out_r, config.output_limit)
        self._output.start()
        self.pid = self.leader
        self._disk = (diskwatch.HomeWatch(self.home, config.disk_mb * 1024 * 1024,
                                          lambda: lifetime.kill_groups(self.pid, self.leader), lambda: self.pid)
                      if level.home_on_disk else None)
        self.namespace: str | None = None   # the worker's own pid namespace (namespaces level)
        try:
            hello = self._receive(START_TIMEOUT)
            if type(hello.get("pid")) is not int:
                raise WorkerCrashed(protocol.ErrorKind.DIED, "did not say hello")
            self.pid = hello["pid"]
            if level.own_pid_namespace:
                self.namespace = lifetime.pid_namespace(self.pid)
            self.ready = protocol.Ready.from_json(self._receive(START_TIMEOUT))
        except (WorkerCrashed, wire.WireError):
            self.kill()
            time.sleep(0.1)
            raise SandboxStartError("the sandbox worker failed to start:\n" + self._output.text()) from None

    def _receive(self, timeout: float) -> dict:
        try:
            header, _ = wire.recv(_DeadlineSocket(self._sock, time.monotonic() + timeout),  # type: ignore[arg-type]
                                  limit=wire.MAX_REPLY_BYTES, header_limit=wire.MAX_REPLY_HEADER_BYTES)
            return header
        except TimeoutError:
            raise WorkerCrashed(protocol.ErrorKind.TIMEOUT, f"did not start within {timeout:g} s") from None
        except (EOFError, OSError) as exc:
            raise WorkerCrashed(protocol.ErrorKind.DIED, str(exc)) from None

    def request(self, request: protocol.Request, timeout: float) -> protocol.Reply:
        deadline = time.monotonic() + timeout
        try:
            self._sock.settimeout(timeout)
            wire.send(self._sock, *request.to_frame())
            header, buffers = wire.recv(_DeadlineSocket(self._sock, deadline),   # type: ignore[arg-type]
                                        limit=wire.MAX_REPLY_BYTES, header_limit=wire.MAX_REPLY_HEADER_BYTES)
            return protocol.Reply.from_frame(header, buffers)
        except TimeoutError:
            self.kill()
            raise WorkerCrashed(protocol.ErrorKind.TIMEOUT, f"did not finish within {timeout:g} s "
                                "(an infinite loop, or far too slow?)") from None
        except (EOFError, OSError, wire.WireError) as exc:
            ended = isinstance(exc, (EOFError, ConnectionResetError))   # reset: it closed unread
            status = self.kill(grace=0.5 if ended else 0.0)
            if self._disk is not None and self._disk.exceeded:
                raise WorkerCrashed(protocol.ErrorKind.DIED, self._disk.message()) from None
            raise WorkerCrashed(protocol.ErrorKind.DIED, describe_exit(status, self.config, exc)) from None

    def kill(self, grace: float = 0.0) -> int | None:
        if self._disk is not None:
            self._disk.close()
        status = self._zygote.reap(self.leader, timeout=grace) if grace else None
        lifetime.kill_groups(self.pid, self.leader)
        self.level.sweep(self.ids, self.namespace, confined=self.ready.files_restricted,
                         shared=tuple(self.config.share))
        if status is None:
            status = self._zygote.reap(self.leader)
        self._sock.close()
        users.remove_home(self.home)           # any depth, never raises (filetree.remove)
        return status

    def output(self) -> str:
        return self._output.text()


SETUP_FAILED = 70        # a worker's exit status when its set-up raised (written to the log first)


def describe_exit(status: int | None, config: limits.SandboxConfig, exc: Exception) -> str:
    if isinstance(exc, wire.WireError):
        return f"sent a reply the grader could not read ({exc})"
    if status is None:
        return "stopped answering"
    code = os.waitstatus_to_exitcode(status)
    if code in (128 + signal.SIGKILL, -signal.SIGKILL):
        return ("was killed with SIGKILL: the machine ran out of memory (the worker may "
                f"allocate {config.memory_mb} MB), or the code killed its own process")
    if code > 128 or code < 0:
        sig = code - 128 if code > 128 else -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"was killed by signal {name}"
    if code == SETUP_FAILED:
        return (f"exited with status {SETUP_FAILED}: the worker's own set-up failed (the grader's log says "
                f"why: the kit's files unreadable to the worker user?), unless the code called os._exit({SETUP_FAILED})")
    return f"exited with status {code} (os._exit / a crash in native code?)"


class ForkedBackend(backends.WorkerBackend):
    """Workers forked from this process's zygote, one per exercise, at ``level``.

    Warm-ups (``worker.WARM_UPS``): ``warm_up``, what every worker needs, and the first
    module's part of ``needs`` (what each student module's calls need; its first module is
    the first worker's, in the order the suites run) are loaded by the zygote at once, while
    the grader goes on. A worker is forked only after its own module's parts are loaded,
    whatever the order; the other modules' parts are loaded after the first worker is forked,
    while it runs, so that the first worker does not wait for what only later ones need."""
    per_exercise = True

    def __init__(self, config: limits.SandboxConfig, level: isolation.Level, why: str,
                 warm_up: tuple[str, ...] = (), zygote: ForkServer | None = None,
                 needs: Mapping[str, tuple[str, ...]] | None = None):
        super().__init__(level, why)
        if level.worker_user:           # a worker user no other grader on the machine uses now
            config = dataclasses.replace(config, user=users.claim(config.user))
        self.config = config
        self.ids = level.worker_ids(config)
        self._checked: list[str] | None = None
        self._zygote = zygote                           # None: this process's shared one
        self._needs = dict(needs or {})
        self._every_part = backends.every_part(warm_up, self._needs)
        first = next(iter(self._needs.values()), ())
        self.zygote().warm_up((*warm_up, *first))       # the zygote loads it while we go on

    def zygote(self) -> ForkServer:
        if self._zygote is not None and self._zygote.alive():
            return self._zygote
        return shared()

    def check_files(self) -> list[str]:
        if self._checked is None:
            self._checked = self.level.check_files(self.config, self.ids)
        return self._checked

    def start(self, module: str | None = None) -> ForkedWorker:
        self.check_files()
        zygote = self.zygote()          # a zygote started again (the first died) has loaded nothing
        zygote.warm_up(self._every_part if module is None else self._needs.get(module, ()))
        worker = ForkedWorker(zygote, self.config, self.level, self.ids)
        zygote.warm_up(self._every_part)                # later workers' parts, while this one runs
        return worker


# --------------------------------------------------------------------------- zygote side

def _zygote_main(ctrl: socket.socket) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from autograder.sandbox import worker       # the worker's modules, loaded once, here
    isolation.registry()                         # every level's module, before any worker hides the kit
    worker.preinstall_bans()                     # shared by every worker, not copied into each
    _freeze()
    finished: dict[int, int] = {}
    leaders: set[int] = set()                           # spawned workers not yet reaped
    backstop = _Backstop()                              # worker users swept when the zygote ends
    homes: dict[int, str] = {}                          # worker leader -> its home, until reaped
    lifetime.on_shutdown(backstop.sweep)
    lifetime.on_shutdown(lambda: [users.remove_home(home) for home in homes.values()])
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctrl, _CTRL_MAX, 4)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        if msg["op"] == "warm":
            worker.warm_up(tuple(msg["parts"]))
            _freeze()
            ctrl.sendall(b'{"ok": true}')
        elif msg["op"] == "spawn":
            spec = WorkerSpec.from_json(msg["spec"])
            pid, word = _spawn(fds, spec, ctrl)
            leaders.add(pid)
            homes[pid] = spec.home
            backstop.spawned(pid, spec, word)
            for fd in fds:
                os.close(fd)
            ctrl.sendall(json.dumps({"pid": pid}).encode())
        elif msg["op"] == "done":                       # the grader swept after its workers
            backstop.clear()
        elif msg["op"] == "reap":
            status = _reap_worker(msg["pid"], msg["timeout"], finished, leaders)
            if status is not None:                      # the grader removes its home next
                homes.pop(msg["pid"], None)
                backstop.reaped(msg["pid"])
            ctrl.sendall(json.dumps({"status": status}).encode())
        _reap_others(finished, leaders)
        lifetime.kill_orphans(leaders)


class _Backstop:
    """The zygote's sweep for a grader that died before sweeping after its workers.

    Each worker says, on a pipe of its own and before any student code runs, whether Landlock
    confined it to its home (``_CONFINED``) or not (``_UNCONFINED``). A worker user is swept
    over every place it may write (a walk of the whole file system: seconds) only if one of
    its workers ran unconfined; else its processes and kernel objects are enough (its homes
    are removed by the zygote's other clean-up). A worker that said nothing never ran student
    code: it failed or was killed during set-up.
    """

    def __init__(self) -> None:
        self.specs: dict[tuple, WorkerSpec] = {}        # (level, ids) -> a spec, to sweep
        self.words: dict[int, tuple[tuple, int]] = {}   # worker leader -> (its key, its pipe)
        self.unconfined: set[tuple] = set()             # keys with a worker that ran unconfined

    def spawned(self, pid: int, spec: WorkerSpec, word: int) -> None:
        """A worker was forked; its pipe stays open until it is reaped (a worker writing to a
        closed pipe would fail its set-up)."""
        key = (spec.level, spec.ids)
        if isolation.get(spec.level).sweep_at_zygote_exit:
            self.specs[key] = spec
        self.words[pid] = (key, word)

    def reaped(self, pid: int) -> None:
        if pid in self.words:
            self._hear(*self.words.pop(pid))

    def clear(self) -> None:
        """The grader swept after its workers: nothing of theirs is left to sweep."""
        self.specs.clear()
        self.unconfined.clear()

    def sweep(self) -> None:
        """At the zygote's end, after every descendant is dead (their words are final)."""
        for key, word in list(self.words.values()):
            self._hear(key, word)
        self.words.clear()
        for key, spec in self.specs.items():       # only levels that sweep at the zygote's exit
            isolation.get(spec.level).sweep(spec.ids, None, confined=key not in self.unconfined,
                                            shared=tuple(spec.config.share))

    def _hear(self, key: tuple, word: int) -> None:
        try:
            said = os.read(word, 1)
        except OSError:                                 # nothing written, writer still open
            said = b""
        finally:
            os.close(word)
        if said == _UNCONFINED:
            self.unconfined.add(key)


_CONFINED, _UNCONFINED = b"1", b"0"


def _freeze() -> None:
    """What the zygote holds now is never collected in its workers (their pages stay shared),
    and the heap's free pages go back to the system (imports leave many behind).

    Nothing is collected first: imports and warm-ups leave a few dozen unreachable objects
    (30 after ``import torch``, 15 after the meta warm-up), and finding them walks every
    object the process holds (0.1 s after ``import torch``, 0.08 s after the meta warm-up),
    in series before the first worker can start. They stay, frozen, a few kB."""
    gc.freeze()
    lifetime.release_free_memory()


def _reap_worker(pid: int, timeout: float, finished: dict[int, int], leaders: set[int]) -> int | None:
    """Wait for a worker leader; once it has ended, kill whatever it left behind (what was
    below it, and what was re-parented to us when it died) before answering the grader."""
    below = lifetime.descendants(pid)
    status = _wait(pid, timeout, finished)
    if status is not None:
        leaders.discard(pid)
        lifetime.kill_all(below)
        _reap_others(finished, leaders)
        lifetime.kill_orphans(leaders)
    return status


def _wait(pid: int, timeout: float, finished: dict[int, int]) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        if pid in finished:
            return finished.pop(pid)
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)


def _reap_others(finished: dict[int, int], leaders: set[int]) -> None:
    """Collect ended children: workers' statuses are kept for ``_wait``; adopted orphans
    (we are a subreaper) are only reaped."""
    for pid, status in lifetime.ended_children():
        if pid in leaders:
            leaders.discard(pid)
            finished[pid] = status


def _spawn(fds: list[int], spec: WorkerSpec, ctrl: socket.socket) -> tuple[int, int]:
    """Fork a worker; its pid, and the read end of the pipe on which it says whether it is
    confined (non-blocking: read once the worker is dead)."""
    word, tell = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = SETUP_FAILED
        try:
            ctrl.close()
            os.close(word)
            _worker_entry(fds[0], fds[1], spec, tell)
            code = 0
        except BaseException as exc:                     # report set-up failures, never raise
            try:
                os.write(2, f"worker set-up failed: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    os.close(tell)
    os.set_blocking(word, False)
    return pid, word


def _worker_entry(sock_fd: int, out_fd: int, spec: WorkerSpec, tell: int) -> None:
    lifetime.start_worker()                 # zygote's signal handlers off; dies with its parent
    os.setsid()
    try:                # RLIMIT_DATA is per process: if the container still runs out of memory
        with open("/proc/self/oom_score_adj", "w") as adj:     # (a fork bomb that allocates),
            adj.write("1000")                   # the kernel kills the worker, not the grader
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    for fd in (devnull, out_fd):
        os.close(fd)
    _close_all_but(sock_fd, tell)                        # the zygote's socket and anything else
    # the parent's sys.stdout may wrap another fd (pytest's capture): rebind to fds 0-2
    sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, errors="replace", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="replace", closefd=False)
    sock = socket.socket(fileno=sock_fd)
    cfg = spec.config
    level = isolation.get(spec.level)
    root, ipc_bounded = level.enter(sock, cfg, spec)     # namespaces: continues as pid 1 of a new one
    level.drop_user(spec)
    lifetime.die_with_parent()              # again: a change of user or group ids clears it
    os.chdir(spec.home)
    limits.scrub_environment()                           # the grader's, also from memory
    os.environ.update(limits.worker_environment(spec.home))
    tempfile.tempdir = None                 # the grader's (cached before the fork): the worker's TMPDIR
    level.rlimits(cfg)
    confined = level.confine(cfg, spec, root)
    os.write(tell, _CONFINED if confined else _UNCONFINED)   # before any student code; raises
    os.close(tell)                                       # if it cannot be said: no student code
    filtered = level.filter_syscalls(ipc_bounded)
    _single_threaded_maths()
    from autograder.sandbox.worker import serve
    ready = protocol.Ready(network_blocked=level.network_isolated or filtered, root=root,
                           syscall_filter=filtered, files_restricted=confined)
    wire.send(sock, ready.to_json())
    serve(sock)


def _close_all_but(*keep: int) -> None:
    """Close every descriptor from 3 up except ``keep``."""
    start = 3
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, 65536)


def _single_threaded_maths() -> None:
    """OMP_NUM_THREADS=1 in the environment comes too late: torch is already loaded. Set it
    directly. One thread per worker keeps grading predictable on a shared 2-core machine
    (spinning OpenMP threads can make small ops many times slower) and keeps the worker
    well under its process limit."""
    import torch
    torch.set_num_threads(1)
