"""The *user* isolation level's file protection: ownership and permissions, set and verified.

Without namespaces nothing can be hidden from the worker by mounts, so what it must not read
(the kit's source, the reference, the hidden suites, the results folder, the submission and
the platform's submission metadata) is made unreadable to the worker user by ownership and
permissions:

* at image build time, ``setup.sh`` runs ``python -m autograder.sandbox.harden SOURCE``:
  the folder becomes root-owned, folders 0700 and files without group/other bits, while the
  interpreter, its standard library and site-packages stay readable (a folder holding them
  is not locked itself, only its other children);
* before any student code runs, the grader probes as the worker user whether any of those
  paths is readable (:func:`readable_by`), locks what is (it is root), probes again, and
  refuses to run student code at this level if something is still readable
  (:func:`ensure_unreadable`).

The grader's own config/cache folder (grader_home.py) must stay readable: it is never locked.
"""
from __future__ import annotations

import os
import stat
import sys
import sysconfig

from autograder.sandbox.grader_home import HOME_VARS, prepare_grader_home


class StillReadable(RuntimeError):
    """Paths the worker user could still read after locking: no student code at this level."""


# --------------------------------------------------------------------------- locking

def import_roots() -> set[str]:
    """What the worker reads after it started: the standard library, site-packages, and the
    grader's config/cache folder (see :func:`prepare_grader_home`)."""
    paths = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(os.environ[v] for v in HOME_VARS if os.environ.get(v))
    return {os.path.realpath(p) for p in paths if p and os.path.exists(p)}


def interpreter_roots() -> set[str]:
    """Never locked, nor any folder holding them: :func:`import_roots`, the interpreter's
    prefixes and its executable's folder."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    return import_roots() | {os.path.realpath(p) for p in paths if p and os.path.exists(p)}


def _contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def lock_targets(path: str, keep: set[str]) -> list[str]:
    """What to lock so that ``path`` is unreadable except for ``keep``: ``path`` itself, or,
    when it holds something in ``keep``, its other children (recursively)."""
    path = os.path.realpath(path)
    if not any(_contains(path, k) for k in keep):
        return [path]
    if any(_contains(k, path) for k in keep) or not os.path.isdir(path):
        return []                                   # ``path`` is (inside) something to keep
    found = []
    for name in sorted(os.listdir(path)):
        found += lock_targets(os.path.join(path, name), keep)
    return found


def lock(path: str, recursive: bool = False, worker_uid: int | None = None) -> None:
    """No access for group and others (folders 0700, files 0600 or 0700), root-owned.

    With ``worker_uid`` (the grader, at run time), only what that user owns changes owner: a
    checkout owned by a teaching assistant stays theirs, and closed to everyone else."""
    for target in _walk(path) if recursive else [path]:
        info = os.lstat(target)
        if stat.S_ISLNK(info.st_mode):
            continue                                # a link's own mode means nothing
        if worker_uid is None or info.st_uid == worker_uid:
            os.chown(target, 0, 0)
        os.chmod(target, 0o700 if stat.S_ISDIR(info.st_mode) else info.st_mode & 0o700 | 0o600)


def _walk(path: str):
    yield path
    if os.path.isdir(path) and not os.path.islink(path):
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                yield os.path.join(root, name)


def lock_down(paths: list[str], recursive: bool = True) -> list[str]:
    """Lock ``paths`` for good (image build time); the paths locked."""
    keep = interpreter_roots()
    done = []
    for path in paths:
        if os.path.exists(path):
            for target in lock_targets(path, keep):
                lock(target, recursive=recursive)
                done.append(target)
    return done


# --------------------------------------------------------------------------- verification

def access_as(paths: list[str], uid: int, gid: int) -> dict[str, tuple[bool, bool]]:
    """``{path: (can read, can enter/execute)}`` for a process of ``uid``/``gid``, found by a
    probe forked as that user: the kernel answers, ACLs included. Missing paths are left out;
    if the probe fails, every path is reported open (assume the worst)."""
    from autograder.sandbox import limits
    existing = [p for p in paths if os.path.lexists(p)]
    if not existing:
        return {}
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            limits.drop_privileges(uid, gid)
            answer = "".join("%d%d" % (os.access(p, os.R_OK), os.access(p, os.X_OK)) for p in existing)
            os.write(write_end, answer.encode() + b"\n")
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if status != 0 or len(answer) != 2 * len(existing) + 1:
        return {p: (True, True) for p in existing}
    return {p: (answer[2 * i] == "1", answer[2 * i + 1] == "1") for i, p in enumerate(existing)}


def readable_by(paths: list[str], uid: int, gid: int) -> list[str]:
    """The paths ``uid`` could read (a file) or list or enter (a folder)."""
    return [p for p, (r, x) in access_as(paths, uid, gid).items()
            if r or (x and os.path.isdir(p))]


def unreadable_interpreter(uid: int, gid: int) -> list[str]:
    """Parts of the interpreter (see :func:`import_roots`) that ``uid`` cannot read: the
    worker's lazy imports would fail there (e.g. a Python under a 0700 ``/root``)."""
    roots = sorted(import_roots())
    access = access_as(roots, uid, gid)
    return [p for p in roots if p in access and not (access[p][0] and
                                                    (access[p][1] or not os.path.isdir(p)))]


def ensure_unreadable(paths: list[str], uid: int, gid: int) -> list[str]:
    """Make sure the worker user can read none of ``paths`` (the grader is root): lock what
    it can read, check again. The paths locked; :class:`StillReadable` if any remain."""
    exposed = readable_by(paths, uid, gid)
    if not exposed:
        return []
    keep = interpreter_roots()
    locked = []
    for path in exposed:
        for target in lock_targets(path, keep):
            lock(target, worker_uid=uid)
            locked.append(target)
    still = readable_by(paths, uid, gid)
    if still:
        raise StillReadable("the worker user could still read " + ", ".join(still) +
                            " (they hold the interpreter or could not be locked); student code "
                            "is not run at the user isolation level")
    return locked


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.sandbox.harden FOLDER...``: lock the kit at image build time."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m autograder.sandbox.harden FOLDER [FOLDER...]", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("harden: must run as root", file=sys.stderr)
        return 1
    home = prepare_grader_home()
    import matplotlib.font_manager  # noqa: F401 - builds the font cache once, in the image
    done = lock_down(args)
    print(f"harden: locked {len(done)} path(s) for the worker user: {', '.join(done)}; "
          f"grader config/cache folder {home}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
