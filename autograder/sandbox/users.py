"""The worker user: created on demand, dropped to, and its files swept (user level).

Killing the user's processes belongs to :mod:`autograder.sandbox.lifetime`; running a
helper as the user to :mod:`autograder.sandbox.asuser`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

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
    """Delete what ``uid`` left at the top of the shared scratch folders (user level);
    the paths removed. Symbolic links are removed, never followed."""
    import shutil
    removed = []
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                if info.st_uid != uid:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
                removed.append(path)
            except OSError:
                continue
    return removed
