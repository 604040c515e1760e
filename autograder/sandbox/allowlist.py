"""The *namespaces* level's root of its own: an allowlist, not a denylist.

In its private mount namespace, before dropping privileges, the worker builds a new root on a
small tmpfs and moves into it (``pivot_root``; ``chroot`` where that is refused). What is in it:

* read-only binds of what Python, numpy, torch and matplotlib read after start-up: the
  standard library, site-packages, the other ``sys.path`` entries except those holding the
  kit (its modules the worker needs, ``autograder.support`` and ``autograder.sandbox.worker``,
  are imported before the fork), and the grader's matplotlib/torch config folder;
* the system's shared libraries (``/usr/lib``, ``/lib``, ``/lib64`` ...) and fonts, ``/etc/ld.so.cache``,
  a minimal ``/etc`` (passwd and group with root and the worker user, localtime);
* ``/dev/null``, ``/dev/zero``, ``/dev/random``, ``/dev/urandom``;
* a private, size-capped ``/tmp`` (holding the worker's home) and ``/dev/shm``;
* an empty ``/proc``, mounted afresh by the worker as pid 1 of its pid namespace;
* folders named in ``SandboxConfig.share`` (``AUTOGRADER_SANDBOX_SHARE``; the kit's tests
  use it for an attack's proof that it ran), read-write.

Nothing else: not the kit, not the submission (its source travels as text), not other
submissions, not ``/etc/shadow``, not other processes. Protected paths that lie inside a bound
folder (the kit installed into site-packages) are covered again inside the new root.

What imports need is never hidden: the interpreter's import roots
(standard library, site-packages) are bound even when they lie inside a hidden folder (a
results file written into the kit's checkout hides the checkout, and the ``.venv`` in it),
and are bound again where ``sys.path`` names them through a symbolic link (``.venv`` linking
to a venv elsewhere): the worker's ``sys.path`` keeps the named form.
"""
from __future__ import annotations

import os
import platform
import shutil
import sys

from autograder.sandbox import mounts
from autograder.sandbox.limits import libc as load_libc

SYSTEM = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32", "/usr/local/lib",
          "/usr/share/zoneinfo", "/usr/share/fonts")     # fonts: matplotlib's cache may list them
DEVICES = ("null", "zero", "random", "urandom")
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


def _inside(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def import_paths(protected: list[str]) -> list[str]:
    """What to bind: the interpreter's import roots (always, even inside a protected folder),
    and ``sys.path`` entries that neither hold nor lie in a protected path (the kit's
    checkout, a hidden results folder); outermost only. Real paths."""
    from autograder.sandbox.harden import import_roots
    roots = import_roots()
    entries = {p for p in mounts.interpreter_paths() if os.path.isdir(p) or os.path.isfile(p)}
    entries -= {sys.prefix, sys.base_prefix} - roots        # prefixes: only what imports need
    entries = {p for p in entries if p in roots or
               not any(_inside(p, h) or _inside(h, p) for h in protected)}
    chosen = roots | entries
    return sorted(p for p in chosen if not any(q != p and _inside(q, p) for q in chosen))


def places(protected: list[str]) -> list[tuple[str, str]]:
    """``(source, where)`` pairs: every :func:`import_paths` entry at its own place, and again
    at each named form (:func:`autograder.sandbox.harden.named_forms`) that leads into one."""
    from autograder.sandbox.harden import named_forms
    chosen = import_paths(protected)
    out = [(p, p) for p in chosen]
    for named, real in sorted(named_forms().items()):
        if any(_inside(c, real) for c in chosen) and not any(_inside(c, named) for c in chosen):
            out.append((real, named))
    return out


def cover(path: str, keep: list[str], prefix: str = "", top: bool = True) -> list[str]:
    """Hide ``prefix + path`` from the worker except the import paths in ``keep``: the folder
    itself when it holds none of them; else, recursively, its other children (links among
    them are left alone: they are not the protected thing, and a cover would land on their
    target). An import root itself is never hidden. The paths covered."""
    if path in keep:
        return []
    here = prefix + path
    if not top and os.path.islink(here) and not any(_inside(path, k) for k in keep):
        return []
    if not any(_inside(path, k) for k in keep):
        mounts.hide_folders([here])
        return [path]
    covered = []
    try:
        names = sorted(os.listdir(here))
    except OSError:
        return []
    for name in names:
        covered += cover(os.path.join(path, name), keep, prefix, top=False)
    return covered


def hide_except_imports(protected: list[str]) -> list[str]:
    """Where no root of its own could be built: hide ``protected`` in place (mounts), sparing
    the import paths (real and named forms) that lie inside them. The paths covered."""
    keep = sorted({where for _, where in places(protected)} | {real for real, _ in places(protected)})
    covered = []
    for path in protected:
        if os.path.lexists(path):
            covered += cover(path, keep)
    return covered


def build(new_root: str, protected: list[str], home: str, uid: int, gid: int, user: str,
          scratch_mb: int, share: list[str] = ()) -> None:
    """Fill ``new_root`` (an empty folder, made a tmpfs here) with the allowlist."""
    mounts.mount_tmpfs(new_root, "size=16m,mode=0755")
    target = lambda path: new_root + path                      # noqa: E731
    for folder, mode in (("/tmp", 0o1777), ("/dev/shm", 0o1777)):
        os.makedirs(target(folder), exist_ok=True)
        mounts.mount_tmpfs(target(folder), f"size={scratch_mb}m,mode={mode:o}")
    for path in [p for p in SYSTEM if os.path.lexists(p)]:
        if os.path.islink(path):
            os.makedirs(os.path.dirname(target(path)), exist_ok=True)
            os.symlink(os.readlink(path), target(path))
        else:
            _bind(path, target(path))
    shown = places(protected)
    for source, where in shown:
        if not os.path.exists(target(where)):                  # not already inside /usr/lib
            _bind_reachable(source, target(where), uid, gid)
    for path in share:                                         # the kit's tests only
        if os.path.isabs(path) and os.path.isdir(path):
            _bind(path, target(path), read_only=False)
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            _bind(f"/dev/{name}", target(f"/dev/{name}"), read_only=False)
    _minimal_etc(target("/etc"), uid, gid, user)
    os.makedirs(target("/proc"), exist_ok=True)
    os.makedirs(target(home), 0o700, exist_ok=True)
    os.chown(target(home), uid, gid)
    keep = sorted({where for _, where in shown})
    for path in protected:                     # inside a bound folder, or holding an import root
        if os.path.lexists(target(path)):
            cover(path, keep, prefix=new_root)


def enter(new_root: str) -> str:
    """Make ``new_root`` the root of this mount namespace; "pivot_root" or "chroot"."""
    os.chdir(new_root)
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    libc = load_libc()
    if number is not None and libc.syscall(number, b".", b".") == 0:
        libc.umount2(b".", mounts.MNT_DETACH)                        # the old root, stacked below
        os.chdir("/")
        return "pivot_root"
    os.chroot(".")
    os.chdir("/")
    return "chroot"


def reachable(path: str, uid: int, gid: int) -> bool:
    """The worker user (``uid``, ``gid``) may list and enter the folder ``path`` (its mode bits)."""
    info = os.stat(path)
    need = 0o500 if info.st_uid == uid else 0o050 if info.st_gid == gid else 0o005
    return info.st_mode & need == need


def _bind_reachable(source: str, dest: str, uid: int, gid: int) -> None:
    """Bind ``source`` at ``dest``; a folder the worker user could not enter (a checkout made
    by ``mktemp -d``, mode 0700, whose ``.venv`` holds site-packages) is rebuilt instead as a
    listable folder of the new root into which each of its children is bound as it is. One
    level only, and only for a folder of at most ``mounts.MAX_REBUILT_ENTRIES`` entries: a tree made
    under umask 077 (every folder and file private) stays unreadable, and says so when the
    worker starts (``worker set-up failed``). Nothing unreadable becomes readable: only the
    way to what others may read opens."""
    if not os.path.isdir(source) or reachable(source, uid, gid):
        _bind(source, dest)
        return
    names = sorted(os.listdir(source))
    if len(names) > mounts.MAX_REBUILT_ENTRIES:
        _bind(source, dest)
        return
    os.makedirs(dest, exist_ok=True)
    os.chmod(dest, 0o755)
    for name in names:
        child = os.path.join(source, name)
        if os.path.islink(child):
            os.symlink(os.readlink(child), os.path.join(dest, name))
        else:
            _bind(child, os.path.join(dest, name))


def _bind(source: str, dest: str, read_only: bool = True) -> None:
    if os.path.isdir(source):
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.exists(dest):
            os.close(os.open(dest, os.O_CREAT | os.O_WRONLY, 0o644))
    mounts.bind(source, dest)
    if read_only:
        mounts.bind(source, dest, remount_flags=mounts.MS_REMOUNT | mounts.MS_RDONLY | mounts.MS_NOSUID)


def _minimal_etc(etc: str, uid: int, gid: int, user: str) -> None:
    os.makedirs(etc, 0o755, exist_ok=True)
    with open(os.path.join(etc, "passwd"), "w") as out:
        out.write(f"root:x:0:0:root:/root:/usr/sbin/nologin\n{user}:x:{uid}:{gid}::/tmp:/usr/sbin/nologin\n")
    with open(os.path.join(etc, "group"), "w") as out:
        out.write(f"root:x:0:\n{user}:x:{gid}:\n")
    for name in ("ld.so.cache", "localtime"):
        if os.path.exists(f"/etc/{name}"):
            shutil.copyfile(f"/etc/{name}", os.path.join(etc, name))
    for name in ("passwd", "group", "ld.so.cache", "localtime"):
        if os.path.exists(os.path.join(etc, name)):
            os.chmod(os.path.join(etc, name), 0o644)
