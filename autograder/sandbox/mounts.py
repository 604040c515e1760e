"""Mounts and namespaces for the namespaces level: the worker's private mount, network and
pid namespaces, its size-capped /tmp and /dev/shm, hidden folders, a fresh /proc.

Runs in the freshly forked worker (as root, before the drop to the worker user); the root of
its own is assembled in :mod:`autograder.sandbox.allowlist` with these calls.
"""
from __future__ import annotations

import ctypes
import os
import sys

from autograder.sandbox.limits import libc

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
MS_REMOUNT = 32
MNT_DETACH = 2
MAX_REBUILT_ENTRIES = 200     # a folder the worker may not enter is rebuilt with at most this many binds


def make_mounts_private() -> None:
    mount("none", "/", None, MS_REC | MS_PRIVATE, None)


def unshare(flags: int) -> None:
    if libc().unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare failed: {os.strerror(err)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    rc = libc().mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                     ctypes.c_ulong(flags), data.encode() if data else None)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def interpreter_paths() -> set[str]:
    """Where the worker may import from: the interpreter's prefixes and ``sys.path``.

    Only real absolute paths: ``sys.path`` also holds path-hook markers (an editable
    install's "__editable__…__path_hook__") and entries that do not exist."""
    return {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, *sys.path)
            if p and os.path.isabs(p) and os.path.exists(p)}


def private_scratch(size_mb: int, keep: set[str], folders: tuple[str, ...] = ("/tmp", "/dev/shm")) -> None:
    """Give the worker its own size-capped ``folders`` (default ``/tmp`` and ``/dev/shm``;
    tmpfs, private mount namespace): what it writes there is capped, invisible to others and
    freed with it.

    Paths in ``keep`` that lay under them (an interpreter or a checkout in ``/tmp``) are
    bound back from the covered folder, reached through a descriptor opened before."""
    for folder in folders:
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        inside = sorted(p for p in keep if p.startswith(folder + "/"))
        old = os.open(folder, os.O_PATH | os.O_DIRECTORY)
        try:
            mount_tmpfs(folder, f"size={size_mb}m,mode=1777")
            for path in inside:
                source = f"/proc/self/fd/{old}/{path[len(folder) + 1:]}"
                if os.path.isdir(source):
                    os.makedirs(path, 0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
                    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
                mount(source, path, None, MS_BIND | MS_REC, None)
        finally:
            os.close(old)


def fresh_proc() -> bool:
    """Mount a /proc that shows only this pid namespace (run as its pid 1). False if the
    platform refuses (the worker then still sees the machine's process list)."""
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        return True
    except OSError:
        return False


def expose_interpreter(stash_root: str) -> None:
    """Let the worker user reach the interpreter's files where an ancestor folder blocks it.

    E.g. a Python under ``/root/.pyenv`` with ``/root`` at mode 0700: lazy imports of the
    standard library would fail for the worker user, a false failure for the student. In the
    private mount namespace, the blocking folder is covered with a traversable tmpfs into
    which only the needed child is bind-mounted back. A needed folder that is itself blocked
    (a ``mktemp -d`` checkout on ``sys.path``) is covered with a listable one into which all
    its children go back (at most ``MAX_REBUILT_ENTRIES``), each keeping its own mode. The
    real file system is untouched.
    """
    needed = interpreter_paths()
    blocked: dict[str, set[str]] = {}
    listed: set[str] = set()             # needed folders themselves blocked: rebuilt listable
    for path in needed:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/" + "/".join(parts[:depth])
            if not os.stat(folder).st_mode & 0o001:
                blocked.setdefault(folder, set()).add(parts[depth])
        if os.path.isdir(path) and os.stat(path).st_mode & 0o005 != 0o005:   # e.g. a mktemp -d checkout
            names = os.listdir(path)
            if len(names) <= MAX_REBUILT_ENTRIES:
                blocked.setdefault(path, set()).update(names)
                listed.add(path)
    # Outermost first: a blocked folder inside another is reached through the bind mount
    # that the outer one's step puts back, and is then covered in turn.
    for n, (folder, children) in enumerate(sorted(blocked.items(), key=lambda kv: kv[0].count("/"))):
        stash = os.path.join(stash_root, f".expose{n}")
        os.mkdir(stash, 0o700)
        mount(folder, stash, None, MS_BIND | MS_REC, None)
        mode = "0755" if folder in listed else "0711"        # an import path must be listable
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size=64k,mode={mode}")
        for child in sorted(children):
            source, target = os.path.join(stash, child), os.path.join(folder, child)
            if os.path.isdir(source):
                os.mkdir(target)
            else:                                      # e.g. a zip on sys.path
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            mount(source, target, None, MS_BIND | MS_REC, None)
        libc().umount2(stash.encode(), MNT_DETACH)
        os.rmdir(stash)


def bind(source: str, target: str, remount_flags: int | None = None) -> None:
    """Bind ``source`` onto ``target`` (with its submounts); or, given ``remount_flags``
    (e.g. MS_REMOUNT | MS_RDONLY), change the flags of that bind mount."""
    if remount_flags is None:
        mount(source, target, None, MS_BIND | MS_REC, None)
    else:
        mount("none", target, None, MS_BIND | remount_flags, None)


def unmount(target: str) -> None:
    """Detach whatever is mounted on ``target`` (errors ignored)."""
    libc().umount2(target.encode(), MNT_DETACH)


def mount_tmpfs(target: str, options: str) -> None:
    """A fresh tmpfs on ``target`` (private mount namespace only)."""
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)


def hide_folders(paths: list[str]) -> None:
    """In a private mount namespace, cover each folder with an empty read-only tmpfs."""
    for path in paths:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0555")
        elif os.path.exists(path):
            mount("/dev/null", path, None, MS_BIND, None)
