"""Helpers the grader forks and drops to the worker user, kept private.

The grader sometimes forks a short-lived helper that becomes the worker user: permission
probes (harden.py, jobs.py) and the user level's kill of every process of that user
(limits.py). Such a helper is a copy of the grader: the hidden suites, the reference and
expected values are in its memory. Once it runs as the worker user, any process of that user
(student code) could read that memory through ``ptrace`` or ``/proc/<pid>/mem`` if the helper
were *dumpable*.

The kernel makes a process that changes its user ids dumpable or not according to the
machine's ``fs.suid_dumpable`` (0 by default; an operator may set 1). :func:`drop_privately`
does not rely on it: it sets ``PR_SET_DUMPABLE`` to 0 before the drop, changes the real and
effective ids while the saved id stays root (a process of the worker user cannot attach to
it then: its ids differ and it still holds capabilities), sets ``PR_SET_DUMPABLE`` to 0 again
(the kernel resets it when the effective id changes), and only then gives up the saved id,
a change after which the kernel leaves dumpability alone. At no moment is the helper both
the worker user's and dumpable. It then checks both facts, and exits if either is false.
"""
from __future__ import annotations

import ctypes
import os
from typing import Callable

PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3
REPLY_LIMIT = 60_000


def _prctl(option: int, value: int = 0) -> int:
    libc = ctypes.CDLL(None, use_errno=True)        # the symbols already loaded: no ldconfig
    return libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0))


def dumpable() -> int:
    """This process's ``PR_GET_DUMPABLE`` (0: no core dumps, no ptrace by its user)."""
    return _prctl(PR_GET_DUMPABLE)


def drop_privately(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good (supplementary groups cleared) without ever being
    dumpable as that user; raises OSError if root could not be dropped or the process is
    still dumpable."""
    if uid == 0:
        raise ValueError("a helper must not stay root")
    _prctl(PR_SET_DUMPABLE, 0)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, 0)          # saved id still root: not attachable by the worker user
    _prctl(PR_SET_DUMPABLE, 0)         # the change of effective id may have reset it
    os.setresuid(-1, -1, uid)          # only the saved id changes: dumpability is left alone
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise OSError("could not drop root privileges")
    if dumpable() != 0:
        raise OSError("the helper is still dumpable")


def run_as_user(uid: int, gid: int, work: Callable[[], bytes]) -> bytes | None:
    """Fork a helper, drop it to ``uid``/``gid`` with :func:`drop_privately`, run ``work``
    there; what it returned (at most :data:`REPLY_LIMIT` bytes), or None if the helper failed
    (it could not drop, ``work`` raised, or it was killed)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the helper: report and leave
        code = 1
        try:
            os.close(read_end)
            drop_privately(uid, gid)
            answer = work()[:REPLY_LIMIT]
            view = memoryview(answer)
            while view:
                view = view[os.write(write_end, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read(REPLY_LIMIT + 1)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    return data
