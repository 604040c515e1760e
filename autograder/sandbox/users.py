"""The worker user: created on demand, dropped to, and its files swept (user level).

Killing the user's processes belongs to :mod:`autograder.sandbox.lifetime`; running a
helper as the user to :mod:`autograder.sandbox.asuser`.
"""
from __future__ import annotations

import os
import subprocess
import sys

from autograder import filetree, textsafe
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
