"""The worker user: created on demand, dropped to, and its files swept (user level).

Killing the user's processes belongs to :mod:`autograder.sandbox.lifetime`; running a
helper as the user to :mod:`autograder.sandbox.asuser`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
import sys

from autograder import filetree, textsafe
from autograder.sandbox.limits import WORKER_USER


@dataclass(frozen=True)
class WorkerIds:
    """The worker user's numeric ids."""
    uid: int
    gid: int


CLAIMS = "/run/autograder-users"     # root-only: one lock file per worker user in use
_claimed: dict[str, int] = {}        # user name -> the locked file's descriptor (kept open)


def claim(base: str = WORKER_USER) -> str:
    """A worker user that no other grader on this machine is using: ``base`` when free, else
    ``base-2``, ``base-3``, … Held (an ``flock`` on a root-only file) until this process and
    the children it forks (its zygote) have ended, so the user level's sweep, which kills every
    process of its worker user, can never reach another grader's worker. Where the lock cannot
    be taken at all (no /run, not root), ``base`` itself."""
    if base in _claimed:
        return base
    try:
        import fcntl
        os.makedirs(CLAIMS, 0o700, exist_ok=True)
    except (ImportError, OSError):
        return base
    for k in range(1, 1000):
        name = base if k == 1 else f"{base}-{k}"
        if name in _claimed:
            return name
        fd = os.open(os.path.join(CLAIMS, name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _claimed[name] = fd
        return name
    return base


def ensure_user(name: str = WORKER_USER) -> WorkerIds:
    """The worker user's ids, creating a locked system account on demand."""
    import pwd
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"     # root's PATH may lack sbin
        subprocess.run([useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        entry = pwd.getpwnam(name)
    return WorkerIds(entry.pw_uid, entry.pw_gid)


def drop_privileges(ids: WorkerIds) -> None:
    os.setgroups([])
    os.setresgid(ids.gid, ids.gid, ids.gid)
    os.setresuid(ids.uid, ids.uid, ids.uid)
    if os.geteuid() == 0 or os.getuid() == 0:
        raise OSError("could not drop root privileges")


def remove_user_files(uid: int, folders: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")) -> list[str]:
    """Delete what ``uid`` left at the top of the shared scratch folders (user level); the
    paths removed. Trees of any depth go without recursion (:func:`autograder.filetree.remove`);
    links are removed, never followed. Never raises: what stays is said on stderr (the staff
    log), never in a grade."""
    removed = []
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_uid != uid:
                    continue
            except OSError:
                continue
            outcome = filetree.remove(path)
            if outcome.complete:
                removed.append(path)
            else:
                staff_note(f"sweep: could not remove all of {path} (left by uid {uid}): {outcome.summary()}")
    return removed


def remove_home(home: str) -> None:
    """Delete a worker's home folder (the worker wrote into it: any depth); never raises."""
    outcome = filetree.remove(home)
    if not outcome.complete:
        staff_note(f"sweep: could not remove all of the worker's folder {home}: {outcome.summary()}")


def staff_note(message: str) -> None:
    """A line for course staff (the grader's log, stderr), never for a student's results."""
    try:
        print(textsafe.one_line(message, 600), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
