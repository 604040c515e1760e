"""The worker user: created on demand, dropped to, and its files swept (user level).

Killing the user's processes belongs to :mod:`autograder.sandbox.lifetime`; running a
helper as the user to :mod:`autograder.sandbox.asuser`.
"""
from __future__ import annotations

import os
import subprocess

from autograder.sandbox.limits import WORKER_USER


def ensure_user(name: str = WORKER_USER) -> tuple[int, int]:
    """The worker user's (uid, gid), creating a locked system account on demand."""
    import pwd
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
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
