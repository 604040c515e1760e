"""Isolation levels: the strongest one the platform allows, picked once per process.

    namespaces  root with CAP_SYS_ADMIN (and mounts allowed): the worker gets private mount,
                network and pid namespaces and a root of its own with only what Python and
                its libraries need (allowlist.py), private /tmp and /dev/shm, a fresh /proc.
    user        root without namespaces (Docker's default seccomp profile, no CAP_SYS_ADMIN:
                Gradescope): the worker drops to the unprivileged worker user; the kit, hidden
                tests, results and metadata are unreadable to it by ownership and permissions
                (verified before any student code runs, see harden.py); network blocked with
                a seccomp filter where the kernel allows it.
    process     not root (a laptop, a student's ``check``): a separate process with limits.

What the *user* level cannot do (no mounts): the worker sees the file system as its user's
permissions allow (system files, ``/proc`` of every process: command lines, not
environments); RLIMIT_FSIZE caps each file (64 MB), not the number of files, so it can fill
``/tmp``, ``/var/tmp`` or ``/dev/shm`` while it runs (what it leaves at their top level is
deleted when it ends; files inside other users' world-writable folders are not); UNIX
sockets stay open; the seccomp filter exists for x86-64 and aarch64 only (elsewhere the
log says the network is NOT blocked).

Forced levels (tests, instructors): ``SandboxConfig.isolation``, else the environment
variable ``AUTOGRADER_ISOLATION``, else "auto". A forced level stronger than the platform
allows is refused (:class:`IsolationUnavailable`), never silently weakened.
"""
from __future__ import annotations

import functools
import os
import sys

LEVELS = ("namespaces", "user", "process")
ENV_VAR = "AUTOGRADER_ISOLATION"

_DESCRIPTIONS = {
    "namespaces": ("student code runs as an unprivileged user in private mount, network and pid "
                   "namespaces, in a root of its own holding only what Python and its libraries "
                   "need, with private size-capped /tmp and /dev/shm; the kit, hidden tests, "
                   "submission, results and other processes are not visible to it"),
    "user": ("student code runs as an unprivileged user; the kit, hidden tests, submission, "
             "results and submission metadata are unreadable to it by ownership and permissions "
             "(checked before grading); no private namespaces"),
    "process": ("student code runs in a separate process with time and memory limits, as the "
                "same user as the grader (no user or namespace isolation)"),
}


class IsolationUnavailable(RuntimeError):
    """A forced isolation level that this platform cannot give."""


def describe_level(level: str) -> str:
    """One line for logs and the results summary: what ``level`` protects."""
    return _DESCRIPTIONS[level]


@functools.lru_cache(maxsize=1)
def detect() -> tuple[str, str]:
    """(strongest level available, why), probed once per process."""
    if not hasattr(os, "geteuid") or not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return "process", f"no user or namespace isolation on {sys.platform} (or without fork)"
    if os.geteuid() != 0:
        return "process", "the grader is not running as root"
    refused = _probe_namespaces()
    if refused is None:
        return "namespaces", "root, and private namespaces and mounts are allowed"
    return "user", f"root, but private namespaces are refused here ({refused})"


def requested(config_value: str | None) -> str:
    """The level asked for: the config's, else the environment's, else "auto"."""
    value = (config_value or "auto").strip().lower()
    if value == "auto":
        value = (os.environ.get(ENV_VAR) or "auto").strip().lower()
    if value != "auto" and value not in LEVELS:
        raise ValueError(f"unknown isolation level {value!r} (use auto, {', '.join(LEVELS)})")
    return value


def resolve(config_value: str | None) -> tuple[str, str]:
    """(level to use, why). A forced level stronger than the platform allows is refused."""
    wanted = requested(config_value)
    if wanted == "process":             # always available: no probe (it forks, and may be refused)
        return "process", "forced (isolation by process only)"
    best, why = detect()
    if wanted == "auto":
        return best, why
    if LEVELS.index(wanted) < LEVELS.index(best):
        raise IsolationUnavailable(f"isolation level {wanted!r} was asked for, but the best this "
                                   f"platform gives is {best!r}: {why}")
    if wanted == best:
        return wanted, f"forced ({why})"
    return wanted, f"forced (the platform would allow {best!r})"


def spawned_level(config_value: str | None) -> tuple[str, str]:
    """(level, why) for a worker started without fork (sandbox/spawn.py): always "process".

    As root on Linux that worker would run student code as root, with no user or namespace
    isolation, where the platform gives more: refused (:class:`IsolationUnavailable`) unless
    the process level is forced too, in which case the reason says so loudly (stderr and the
    log, through :func:`announce`). An operator's ``AUTOGRADER_WORKER_START=spawn`` left in
    a root shell thus never weakens grading silently."""
    wanted = requested(config_value)
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0 and sys.platform.startswith("linux")
    if not as_root:
        return "process", "workers are started without fork here (a fresh interpreter each)"
    if wanted != "process":
        raise IsolationUnavailable(
            "workers started without fork (AUTOGRADER_WORKER_START=spawn or worker_start='spawn') "
            "would run student code as root with no user or namespace isolation; refused as root: "
            "unset it, or force the process level (--isolation process) to accept that")
    return "process", ("forced, and workers started without fork: student code runs AS ROOT with "
                       "no user or namespace isolation (the platform would allow "
                       f"{detect()[0]!r})")


_announced: set[tuple[int, str, str]] = set()


def announce(level: str, why: str) -> None:
    """Print ``isolation: <level> — <why>`` to stderr, once per process, level and reason
    (a new reason, such as a forced level that runs student code as root, is always shown)."""
    key = (os.getpid(), level, why)
    if key not in _announced:
        _announced.add(key)
        print(f"isolation: {level} — {why}", file=sys.stderr, flush=True)


def _probe_namespaces() -> str | None:
    """None if a child can make private mount/network/pid/IPC namespaces and mount a tmpfs in
    them; otherwise why not (e.g. "unshare: Operation not permitted")."""
    from autograder.sandbox import mounts
    from autograder.sandbox.ipc import CLONE_NEWIPC
    from autograder.sandbox.limits import libc

    libc()                                      # loaded before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                # the probe: report and leave, nothing else
        os.close(read_end)
        message = b"OK"
        try:
            mounts.unshare(mounts.CLONE_NEWNS | mounts.CLONE_NEWNET | mounts.CLONE_NEWPID | CLONE_NEWIPC)
            mounts.make_mounts_private()
            mounts.mount_tmpfs("/tmp", "size=4k,mode=0700")
        except BaseException as exc:            # noqa: BLE001 - the reason is the answer
            message = str(exc).encode()[:500] or type(exc).__name__.encode()
        os.write(write_end, message)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reason = pipe.read().decode(errors="replace")
    os.waitpid(pid, 0)
    if reason == "OK":
        return None
    return reason or "the probe process died"
