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
import gc
import json
import os
import signal
import socket
import sys
import tempfile
import time

from autograder.sandbox import isolation, lifetime, limits, wire

_USER = isolation.UserLevel()          # its sweep runs in the zygote after each user-level worker
# Loaded here, in the grader, so every worker has it before its mounts hide the kit's source.
from autograder.sandbox import worker as _worker_module  # noqa: F401

_CTRL_MAX = 1 << 16


class ForkServer:
    """Grader-side handle to the zygote process."""

    def __init__(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        # Objects that exist now are never collected in the children: the garbage collector
        # then does not walk (and so copy) every page of torch's and numpy's objects in each
        # worker, which keeps them shared with the grader.
        lifetime.die_with_batch()                       # a grader of a killed batch ends
        grader = os.getpid()
        gc.collect()
        gc.freeze()
        pid = os.fork()
        gc.unfreeze()
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

    def spawn(self, fds: list[int], config: dict) -> int:
        socket.send_fds(self._ctrl, [json.dumps({"op": "spawn", "config": config}).encode()], fds)
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


# --------------------------------------------------------------------------- zygote side

def _zygote_main(ctrl: socket.socket) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    finished: dict[int, int] = {}
    leaders: set[int] = set()                           # spawned workers not yet reaped
    users: dict[int, tuple[int, int]] = {}              # user-level leaders -> worker (uid, gid)
    seen: set[tuple[int, int]] = set()                  # every worker user of the user level
    lifetime.on_shutdown(lambda: [_USER.sweep({"uid": u, "gid": g}, None) for u, g in sorted(seen)])
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctrl, _CTRL_MAX, 4)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        if msg["op"] == "spawn":
            pid = _spawn(fds, msg["config"], ctrl)
            leaders.add(pid)
            if isolation.get(msg["config"].get("level", "process")).sweep_in_zygote:
                users[pid] = (msg["config"]["uid"], msg["config"]["gid"])
                seen.add(users[pid])
            for fd in fds:
                os.close(fd)
            ctrl.sendall(json.dumps({"pid": pid}).encode())
        elif msg["op"] == "reap":
            status = _reap_worker(msg["pid"], msg["timeout"], finished, leaders)
            if status is not None and msg["pid"] in users:
                uid, gid = users.pop(msg["pid"])
                _USER.sweep({"uid": uid, "gid": gid}, None)
            ctrl.sendall(json.dumps({"status": status}).encode())
        _reap_others(finished, leaders)
        lifetime.kill_orphans(leaders)


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


def _spawn(fds: list[int], config: dict, ctrl: socket.socket) -> int:
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            ctrl.close()
            _worker_entry(fds[0], fds[1], config)
            code = 0
        except BaseException as exc:                     # report set-up failures, never raise
            try:
                os.write(2, f"worker set-up failed: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    return pid


def _worker_entry(sock_fd: int, out_fd: int, config: dict) -> None:
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
    os.closerange(3, sock_fd)                            # the zygote's socket and anything else
    os.closerange(sock_fd + 1, 65536)
    # the parent's sys.stdout may wrap another fd (pytest's capture): rebind to fds 0-2
    sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, errors="replace", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="replace", closefd=False)
    sock = socket.socket(fileno=sock_fd)
    cfg = limits.SandboxConfig(**config["limits"])
    level = isolation.get(config.get("level", "process"))
    root, ipc_bounded = level.enter(sock, cfg, config)   # namespaces: continues as pid 1 of a new one
    level.drop_user(config)
    lifetime.die_with_parent()              # again: a change of user or group ids clears it
    os.chdir(config["home"])
    limits.scrub_environment()                           # the grader's, also from memory
    os.environ.update(limits.worker_environment(config["home"]))
    tempfile.tempdir = None                 # the grader's (cached before the fork): the worker's TMPDIR
    level.rlimits(cfg)
    filtered = level.filter_syscalls(ipc_bounded)
    network_blocked = level.network_isolated or filtered
    _single_threaded_maths()
    from autograder.sandbox.worker import serve
    wire.send(sock, {"ready": True, "network_blocked": network_blocked, "root": root,
                     "syscall_filter": filtered})
    serve(sock)


def _single_threaded_maths() -> None:
    """OMP_NUM_THREADS=1 in the environment comes too late: torch is already loaded. Set it
    directly. One thread per worker keeps grading predictable on a shared 2-core machine
    (spinning OpenMP threads can make small ops many times slower) and keeps the worker
    well under its process limit."""
    import torch
    torch.set_num_threads(1)
