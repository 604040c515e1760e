"""Every place a worker user can write, found by walking the machine, not from a list.

Where a worker cannot be confined to its own folder by construction (no root of its own, no
Landlock: the user level on an old kernel or a seccomp profile that refuses Landlock), what
it writes anywhere must still die with it: :func:`places` walks every real file system
(``/proc``, ``/sys`` and the other virtual ones excepted) for directories the user may create
entries in (world-writable ones, or its own, or its group's), and the user level sweeps each
of them after every worker (:func:`autograder.sandbox.users.remove_user_files`).

The walk is iterative and bounded (directories visited, depth), follows no symbolic link,
and is done once per process (about 30,000 directories on a Debian root: 1 to 4 s). Its limit:
a writable folder that another user makes after the walk (while the grader runs) is not
swept; Landlock, where the kernel has it, confines the worker by construction instead.
"""
from __future__ import annotations

import functools
import os
import stat

VIRTUAL_FILESYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs",
    "pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "autofs", "binfmt_misc", "nsfs", "efivarfs",
    "selinuxfs", "rpc_pipefs"})
MAX_DIRECTORIES = 400_000
MAX_DEPTH = 64
_W_X, _X = 0o3, 0o1                   # write+search, search (the "other" bits' order)


def virtual_mount_points(mountinfo: str = "/proc/self/mountinfo") -> frozenset[str]:
    """Mount points of virtual file systems (nothing there is a file a worker leaves)."""
    out = set()
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as table:
            for line in table:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) > 4 and right.split()[:1] and right.split()[0] in VIRTUAL_FILESYSTEMS:
                    out.add(_unescape(fields[4]))
    except OSError:
        pass
    return frozenset(out)


def _unescape(path: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    return path.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in path else path


def allows(info: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    """Whether ``uid`` (primary group ``gid``, no other groups: the worker user) has ``bits``
    (rwx as 4/2/1) on a file with this status, by its mode bits."""
    if info.st_uid == uid:
        return (info.st_mode >> 6) & bits == bits
    if info.st_gid == gid:
        return (info.st_mode >> 3) & bits == bits
    return info.st_mode & bits == bits


@functools.lru_cache(maxsize=8)
def places(uid: int, gid: int, root: str = "/") -> tuple[str, ...]:
    """Directories under ``root`` where ``uid`` may create entries, reachable by it (search
    permission on every ancestor), sorted. Only directories it can reach are visited."""
    skip = virtual_mount_points()
    found: list[str] = []
    stack: list[tuple[str, int]] = [(root, 0)]
    visited = 0
    try:
        top = os.lstat(root)
        if stat.S_ISDIR(top.st_mode) and allows(top, uid, gid, _W_X):
            found.append(root)
    except OSError:
        return ()
    while stack and visited < MAX_DIRECTORIES:
        folder, depth = stack.pop()
        visited += 1
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if not entry.is_dir(follow_symlinks=False) or entry.path in skip:
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not allows(info, uid, gid, _X):
                    continue                     # it cannot get in: nothing below is reachable
                if allows(info, uid, gid, _W_X):
                    found.append(entry.path)
                if depth < MAX_DEPTH:
                    stack.append((entry.path, depth + 1))
    return tuple(sorted(found))
