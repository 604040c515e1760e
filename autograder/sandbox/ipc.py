"""No IPC object outlives a worker, and its memory is bounded.

System V shared memory, semaphores and message queues, and POSIX message queues, are kernel
objects, not files: they survive the process that made them and their memory is counted
against no limit of the worker (``RLIMIT_DATA`` does not see a SysV segment). Per level:

* *namespaces*: the worker gets a private IPC namespace (``CLONE_NEWIPC``, next to its mount,
  network and pid namespaces). Whatever it creates lives there and is destroyed by the kernel
  with the namespace, i.e. when the worker's last process ends; the machine's own IPC objects
  are out of its sight. :func:`bound_namespace` caps what the namespace may hold (SysV shared
  memory in total, segments, queues, semaphores) and makes every segment vanish at its last
  detach (``kernel.shm_rmid_forced``). A ``/dev/mqueue`` in the worker's view gets a mount of
  the private namespace's queues (:func:`private_mqueue`).
* *user*: no namespaces. The worker's seccomp filter refuses ``shmget``, ``semget``,
  ``msgget`` and ``mq_open`` (netfilter.py); behind it, :func:`sweep_user` removes every SysV
  object and POSIX queue the worker user owns or created, after each worker and when the
  zygote ends (forkserver.py), as a backstop where the filter is not available.
"""
from __future__ import annotations

import ctypes
import os

CLONE_NEWIPC = 0x08000000
IPC_RMID = 0
SHM_SEGMENTS, QUEUES, QUEUE_BYTES = 64, 16, 16384
SEMAPHORES = "32 256 32 16"          # per set, in all, operations per call, sets
MQUEUE = "/dev/mqueue"
_KINDS = {"shm": "shmid", "sem": "semid", "msg": "msqid"}


def limits_for(max_mb: int) -> dict[str, str]:
    """The ``kernel.*`` IPC settings (path under /proc/sys/kernel -> value) for a namespace
    that may hold at most ``max_mb`` MiB of shared memory."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total = max_mb * 1024 * 1024
    return {"shmmax": str(total), "shmall": str(total // page), "shmmni": str(SHM_SEGMENTS),
            "shm_rmid_forced": "1", "msgmni": str(QUEUES), "msgmnb": str(QUEUE_BYTES),
            "sem": SEMAPHORES}


def bound_namespace(max_mb: int, proc: str = "/proc") -> bool:
    """Cap the caller's (private) IPC namespace: settings of :func:`limits_for`. Root only;
    True if every setting was written (``/proc/sys`` may be read-only: then False)."""
    ok = True
    for name, value in limits_for(max_mb).items():
        try:
            with open(f"{proc}/sys/kernel/{name}", "w") as handle:
                handle.write(value)
        except OSError:
            ok = False
    return ok


def private_mqueue(path: str = MQUEUE) -> bool:
    """Mount the caller's IPC namespace's POSIX queues on ``path`` if that folder exists (a
    private mount namespace): the machine's queues are then out of sight. False otherwise."""
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    from autograder.sandbox import mounts
    try:
        mounts.mount("mqueue", path, "mqueue", mounts.MS_NOSUID | mounts.MS_NODEV | mounts.MS_NOEXEC, None)
        return True
    except OSError:
        return False


def owned_objects(uid: int, proc: str = "/proc") -> list[tuple[str, int]]:
    """``(kind, id)`` of the System V objects (kind "shm", "sem" or "msg") whose owner or
    creator is ``uid``, in the caller's IPC namespace."""
    found = []
    for kind, id_field in _KINDS.items():
        try:
            with open(f"{proc}/sysvipc/{kind}") as table:
                header, *rows = table.read().splitlines()
        except (OSError, ValueError):
            continue
        names = header.split()
        for row in rows:
            values = dict(zip(names, row.split()))
            try:
                if uid in (int(values["uid"]), int(values["cuid"])):
                    found.append((kind, int(values[id_field])))
            except (KeyError, ValueError):
                continue
    return found


def sweep_user(uid: int) -> list[str]:
    """Remove every System V object and POSIX message queue that ``uid`` owns or created (as
    root, in the caller's IPC namespace); what was removed ("shm 32769", "mqueue /name").
    A segment still attached is destroyed at its last detach."""
    if uid == 0:
        raise ValueError("refusing to remove root's IPC objects")
    from autograder.sandbox.limits import libc
    c = libc()
    removers = {"shm": lambda i: c.shmctl(i, IPC_RMID, None),
                "sem": lambda i: c.semctl(i, 0, IPC_RMID),
                "msg": lambda i: c.msgctl(i, IPC_RMID, None)}
    removed = []
    for kind, ident in owned_objects(uid):
        if removers[kind](ctypes.c_int(ident)) == 0:
            removed.append(f"{kind} {ident}")
    try:
        names = os.listdir(MQUEUE)
    except OSError:
        names = []
    for name in names:
        try:
            if os.lstat(os.path.join(MQUEUE, name)).st_uid == uid:
                os.unlink(os.path.join(MQUEUE, name))
                removed.append(f"mqueue /{name}")
        except OSError:
            continue
    return removed
