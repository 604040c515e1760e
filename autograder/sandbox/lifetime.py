"""No process outlives its grader: parent-death signals, a subreaper zygote, tree kills.

Whatever ends the grader (SIGKILL, SIGTERM, SIGINT, an outer ``timeout``, ``batch
--student-timeout``), the fork server ("zygote") and every worker and everything they started
must end with it. The zygote does the cleaning, and does not need the workers' cooperation:

* it leaves the grader's process group, so a group kill (``timeout``, ``batch``) that ends the
  grader leaves the zygote alive long enough to clean up;
* it learns that the grader is gone from its parent-death signal (``GRADER_GONE``, checked
  against ``getppid()`` because the signal also fires when the forking *thread* ends) and from
  EOF on its control socket; SIGTERM/SIGHUP sent to it directly mean the same;
* it is a child subreaper: a process whose parent dies is re-parented to the zygote (or, at
  the namespaces level, to pid 1 of the worker's pid namespace, whose death kills the whole
  namespace). ``setsid`` and double forks change sessions, never ancestry, so every process
  a worker ever started stays a descendant of the zygote, found through ``/proc``. Processes
  that are the zygote's children but not workers it spawned are such orphans, killed as soon
  as the zygote handles a request;
* on exit it SIGKILLs all its descendants, repeating until none is left, then runs its
  clean-ups (:func:`on_shutdown`): the worker users' leftovers (their files everywhere only
  where a worker ran without Landlock: ``forkserver._Backstop``), and the home folders of the
  workers the grader had not reaped (a grader killed mid-call cannot remove them itself).

Backstop for a zygote that is itself SIGKILLed: every worker process gets
``PR_SET_PDEATHSIG=SIGKILL`` (set again after the privilege drop, which clears it), and checks
its parent is still the one that forked it (the parent may have died before the call).

The batch's graders get the same: ``die_with_batch`` (``AG_BATCH_PID``) ends a grader whose
batch was killed.

Process names (``/proc/<pid>/comm``): ``ag-zygote`` and ``ag-worker``, for TAs and tests.
Linux only; elsewhere (no ``prctl``, no ``/proc``) every function here degrades to a no-op.
"""
from __future__ import annotations

import functools
import os
import signal
import sys
import time
from typing import Iterator, NoReturn

PR_SET_PDEATHSIG, PR_SET_NAME, PR_SET_CHILD_SUBREAPER = 1, 15, 36
ZYGOTE_NAME, WORKER_NAME = "ag-zygote", "ag-worker"
GRADER_GONE = signal.SIGUSR1 if hasattr(signal, "SIGUSR1") else None   # the zygote's death signal
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))
BATCH_ENV = "AG_BATCH_PID"            # set by `batch` for its graders: the batch's pid
SWEEP_SECONDS = 3.0                   # how long the final sweep keeps killing new arrivals

_forker = 0                           # pid of the process that last forked (inherited by the child)
_at_shutdown: list = []               # the zygote's clean-ups after its last kill (see on_shutdown)


@functools.lru_cache(maxsize=1)
def _libc():
    """The C library (Linux only), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where it is not available or fails."""
    import ctypes
    libc = _libc()
    return libc is not None and libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; a no-op
    elsewhere): a forked child then has fewer pages to share or copy."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None) if libc is not None else None
    if trim is not None:
        trim(0)


def set_name(name: str) -> None:
    """This process's name in ``/proc/<pid>/comm`` (what ``ps``, ``top``, ``pgrep`` show)."""
    import ctypes
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def _remember_forker() -> None:
    global _forker
    _forker = os.getpid()


# --------------------------------------------------------------------------- the zygote

def start_zygote(grader_pid: int) -> None:
    """First thing in the zygote: watch the grader, adopt orphans, clean up when it goes."""
    try:
        os.setpgid(0, 0)        # out of the grader's group: a group kill must not end us first
    except OSError:
        pass
    set_name(ZYGOTE_NAME)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_remember_forker)

    def grader_gone(_sig: int, _frame: object) -> None:
        if os.getppid() != grader_pid:        # not just the thread that forked us ending
            shutdown()

    def stop(_sig: int, _frame: object) -> None:
        shutdown()

    if GRADER_GONE is not None:
        signal.signal(GRADER_GONE, grader_gone)
        _prctl(PR_SET_PDEATHSIG, GRADER_GONE)
    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)
    if os.getppid() != grader_pid:            # the grader died before the signal was armed
        shutdown()


def on_shutdown(clean_up) -> None:
    """Run ``clean_up()`` when the zygote ends, after every descendant is dead (e.g. remove
    what the worker user left in the kernel: ipc.py). Errors in it are ignored."""
    _at_shutdown.append(clean_up)


def shutdown(code: int = 0) -> NoReturn:
    """End the zygote: every descendant first (workers, their children, adopted orphans),
    then the clean-ups registered with :func:`on_shutdown`."""
    for sig in (GRADER_GONE, *STOP_SIGNALS):
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN)
    kill_descendants(os.getpid(), SWEEP_SECONDS)
    for clean_up in _at_shutdown:
        try:
            clean_up()
        except BaseException:        # noqa: BLE001 - ending regardless
            pass
    os._exit(code)


def kill_orphans(leaders: set[int]) -> None:
    """Kill every child of this zygote that is not a live worker it spawned, with its
    descendants: processes adopted because their parent died (a worker's escaped daemon)."""
    me = os.getpid()
    tree = _children_by_parent()
    strays = [pid for pid in tree.get(me, []) if pid not in leaders]
    for pid in strays:
        _kill_tree(pid, tree)


def kill_descendants(root: int, seconds: float) -> None:
    """SIGKILL every descendant of ``root`` until none is alive (or ``seconds`` pass); reap
    the ones that are our own children. Processes forked during a pass are re-parented to
    us (subreaper) or die with pid 1 of their namespace, and are found by the next pass."""
    deadline = time.monotonic() + seconds
    while True:
        tree = _children_by_parent()
        alive = [pid for pid in _subtree(root, tree) if pid != root and _state(pid) not in "ZX"]
        for pid in alive:
            _kill(pid)
        _reap_children()
        if not alive or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def descendants(root: int) -> list[int]:
    """Every process below ``root`` now (not ``root`` itself)."""
    return _subtree(root, _children_by_parent())[1:]


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        _kill(pid)


def _kill_tree(root: int, tree: dict[int, list[int]]) -> None:
    kill_all(_subtree(root, tree))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _subtree(root: int, tree: dict[int, list[int]]) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, []))
    return out


def _children_by_parent() -> dict[int, list[int]]:
    """``{ppid: [pid, ...]}`` for every process in ``/proc`` (empty where there is none)."""
    tree: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return tree
    for entry in entries:
        if not entry.isdigit():
            continue
        stat = _stat_fields(int(entry))
        if stat:
            tree.setdefault(int(stat[1]), []).append(int(entry))
    return tree


def _stat_fields(pid: int) -> list[str]:
    """Fields of ``/proc/<pid>/stat`` after the command name: [state, ppid, pgrp, ...]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return []
    return text.rsplit(")", 1)[-1].split()


def _state(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[0] if fields else "X"


def ended_children() -> Iterator[tuple[int, int]]:
    """(pid, wait status) of every child that has ended, without blocking."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _reap_children() -> None:
    for _ in ended_children():
        pass


# --------------------------------------------------------------------------- workers

def start_worker() -> None:
    """First thing in a freshly forked worker: forget the zygote's handlers and name, and die
    with the process that forked it."""
    for sig in (GRADER_GONE, *STOP_SIGNALS):
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)
    set_name(WORKER_NAME)
    die_with_parent()


def die_with_parent() -> None:
    """SIGKILL this process when its parent ends. Call again after any change of user or
    group ids: the kernel clears the setting then. If the parent is already gone, exit now.
    (``getppid()`` is 0 when the parent is outside our pid namespace: nothing to check.)"""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    parent = os.getppid()
    if _forker and parent not in (0, _forker):
        os._exit(70)


# --------------------------------------------------------------------------- graders of a batch

def die_with_batch() -> None:
    """In a grader started by ``batch``: end (SIGTERM) when the batch ends, so a killed batch
    leaves no grader behind (the grader's zygote then cleans up after it)."""
    batch = os.environ.get(BATCH_ENV, "")
    if not batch.isdigit():
        return
    if _prctl(PR_SET_PDEATHSIG, signal.SIGTERM) and os.getppid() != int(batch):
        os.kill(os.getpid(), signal.SIGTERM)



# --------------------------------------------------------------------------- killing what the grader started

def signal_group(pid: int | None, sig: int) -> None:
    """Send ``sig`` to the process group led by ``pid`` (a grader started in its own session);
    gone or foreign groups are skipped."""
    if not pid:
        return
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_groups(*pids: int) -> None:
    """SIGKILL each process and its process group (a worker leader and the worker it became:
    everything still in their sessions dies with them). Gone or foreign processes are skipped."""
    for pid in dict.fromkeys(p for p in pids if p and p > 0):
        for kill in (getattr(os, "killpg", None), os.kill):
            if kill is None:
                continue
            try:
                kill(pid, signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
            except (ProcessLookupError, PermissionError, OSError):
                pass


def kill_child(proc, grace: float = 0.0) -> int | None:
    """End a child started with ``subprocess.Popen(start_new_session=True)`` (POSIX: with its
    whole process group; Windows: the process): wait ``grace`` seconds for it to end on its own
    first. Its exit code, if it ended."""
    import subprocess
    if grace:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    if proc.returncode is None:
        if os.name == "posix":
            kill_groups(proc.pid)
        else:
            try:
                proc.kill()
            except OSError:
                pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return proc.returncode


# --------------------------------------------------------------------------- a worker user's processes

def pid_namespace(pid: int) -> str | None:
    """The pid namespace of ``pid`` (e.g. ``"pid:[4026532291]"``), or None if it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def kill_all_of_user(uid: int, gid: int) -> None:
    """SIGKILL every process of ``uid`` (user level: no namespace to kill instead).

    A helper forked for this drops to ``uid`` (privately: :mod:`autograder.sandbox.asuser`)
    and calls ``kill(-1, SIGKILL)``: the kernel
    then signals every process of that user in one pass, so a fork bomb cannot outrun a
    /proc scan. Parallel graders use different worker users; theirs are not touched."""
    if uid == 0:
        raise ValueError("refusing to kill every process of root")
    from autograder.sandbox.asuser import run_as_user

    def kill_everything() -> bytes:
        for _ in range(3):
            try:
                os.kill(-1, 9)
            except ProcessLookupError:
                break
        return b""

    run_as_user(uid, gid, kill_everything)


def kill_user_processes(uid: int, namespace: str | None) -> None:
    """SIGKILL every process owned by ``uid`` inside one worker's pid namespace (escapees
    from the worker's session). Only that namespace: other workers of the same user (a
    parallel ``batch``, another grader on the machine) are not ours to kill. No namespace
    known means the worker's namespace is already gone, and everything in it with it."""
    if namespace is None:
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid and pid_namespace(int(entry)) == namespace:
                os.kill(int(entry), 9)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
