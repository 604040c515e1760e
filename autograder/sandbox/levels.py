"""Which isolation level runs: the strongest the platform allows, picked once per process.

The levels, strongest first, are :func:`autograder.sandbox.isolation.registry` (each class
says what it does and whether the platform allows it):

    namespaces  root with CAP_SYS_ADMIN (and mounts allowed): the worker gets private mount,
                network and pid namespaces and a root of its own with only what Python and
                its libraries need (allowlist.py), private /tmp and /dev/shm, a fresh /proc.
    user        root without namespaces (Docker's default seccomp profile, no CAP_SYS_ADMIN:
                Gradescope): the worker drops to the unprivileged worker user; the kit, hidden
                tests, results and metadata are unreadable to it by ownership and permissions
                (verified before any student code runs, see harden.py); a seccomp filter
                allows no socket but AF_UNIX and no System V / POSIX IPC (and, at every level
                with a filter, no change to a file's mode, owner, times, xattrs or inode
                flags, and no inotify watch or lease).
    landlock    not root, Linux with Landlock (a TA's laptop): the grader's own user, confined
                by Landlock to reading what Python needs and writing its own temp folder, with
                the seccomp filter of the user level and no connect (landlock.py). Forced on a
                root grader, the worker keeps uid 0 but gives up every capability, and never
                reads the password hashes or private keys in /etc.
    process     not root and no Landlock (macOS, Windows, old kernels; a student's ``check``):
                a separate process with limits; grade and batch say loudly that nothing else
                protects the user's files.

What the *user* level cannot do (no mounts): the worker sees the file system as its user's
permissions allow (system files, ``/proc`` of every process: command lines, not
environments); RLIMIT_FSIZE caps each file (64 MB), not the number of files, so it can fill
the places it may write while it runs (every one of them is swept when it ends:
users.remove_user_files); UNIX sockets stay open; the seccomp filter exists for x86-64 and
aarch64 only (elsewhere the log says the network is NOT blocked).

Forced levels (tests, instructors): ``SandboxConfig.isolation``, else the environment
variable ``AUTOGRADER_ISOLATION``, else "auto". A forced level stronger than the platform
allows is refused (:class:`IsolationUnavailable`), never silently weakened.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Iterator

from autograder.sandbox import isolation

ENV_VAR = "AUTOGRADER_ISOLATION"


class IsolationUnavailable(RuntimeError):
    """A forced isolation level that this platform cannot give."""


def names() -> tuple[str, ...]:
    """Every level, strongest first."""
    return isolation.names()


def describe_level(level: str) -> str:
    """One line for logs and the results summary: what ``level`` protects."""
    return isolation.get(level).description


@functools.lru_cache(maxsize=1)
def detect() -> tuple[str, str]:
    """(strongest level available, why), probed once per process."""
    refused: dict[str, str] = {}          # stronger level -> why the platform refuses it
    for cls in isolation.registry():
        reason = cls.unavailable()
        if reason is None:
            return cls.name, cls.available_because(refused)
        refused[cls.name] = reason
    raise AssertionError("the process level is always available")     # pragma: no cover


def requested(config_value: str | None) -> str:
    """The level asked for: the config's, else the environment's, else "auto"."""
    value = (config_value or "auto").strip().lower()
    if value == "auto":
        value = (os.environ.get(ENV_VAR) or "auto").strip().lower()
    if value != "auto" and value not in names():
        raise ValueError(f"unknown isolation level {value!r} (use auto, {', '.join(names())})")
    return value


def resolve(config_value: str | None) -> tuple[str, str]:
    """(level to use, why). A forced level stronger than the platform allows is refused, and
    so is one the platform cannot give at all (Landlock on an old kernel)."""
    wanted = requested(config_value)
    if wanted == "process":             # always available: no probe (it forks, and may be refused)
        return "process", "forced (isolation by process only)"
    best, why = detect()
    if wanted == "auto":
        return best, why
    order = names()
    if order.index(wanted) < order.index(best):
        raise IsolationUnavailable(f"isolation level {wanted!r} was asked for, but the best this "
                                   f"platform gives is {best!r}: {why}")
    if wanted == best:
        return wanted, f"forced ({why})"
    reason = isolation.get(wanted).unavailable()
    if reason is not None:
        raise IsolationUnavailable(f"isolation level {wanted!r} was asked for, but {reason}")
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
_silent = False                      # inside :func:`silenced`


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """No :func:`announce` meanwhile: ``check``, where students run their own code on their own
    machine (it says what isolation it used in its own words), and a warning meant for staff
    grading untrusted submissions would only confuse them."""
    global _silent
    before, _silent = _silent, True
    try:
        yield
    finally:
        _silent = before


def announce(level: str, why: str) -> None:
    """Print ``isolation: <level> — <why>`` to stderr, once per process, level and reason
    (a new reason, such as a forced level that runs student code as root, is always shown).
    At the process level, where nothing but a separate process stands between student code
    and the user's files, it says so loudly. Nothing inside :func:`silenced`."""
    key = (os.getpid(), level, why)
    if key not in _announced and not _silent:
        _announced.add(key)
        print(f"isolation: {level} — {why}", file=sys.stderr, flush=True)
        if level == "process" and not why.startswith("workers are started without fork"):
            print("isolation: WARNING — at the process level student code runs as YOUR user and can "
                  "read and write your files (no root, no Landlock here); grade untrusted "
                  "submissions as root (namespaces or user level) or on a Linux with Landlock",
                  file=sys.stderr, flush=True)
