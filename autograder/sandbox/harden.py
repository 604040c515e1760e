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


def named_forms() -> dict[str, str]:
    """Import paths as the interpreter names them (``sys.path``, its prefixes, ``sysconfig``),
    mapped to their real paths, where the two differ: a venv reached through a symbolic link
    (``.venv -> /elsewhere/venv``). The worker's ``sys.path`` and every loaded package's
    ``__path__`` use the named form, so the worker must be able to reach it too."""
    names = {*sys.path, sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    names.update(sysconfig.get_path(n) for n in ("stdlib", "platstdlib", "purelib", "platlib"))
    forms = {}
    for name in names:
        if name and os.path.isabs(name) and os.path.exists(name):
            named, real = os.path.normpath(name), os.path.realpath(name)
            if named != real:
                forms[named] = real
    return forms


def interpreter_roots() -> set[str]:
    """Never locked, nor any folder holding them: :func:`import_roots`, the interpreter's
    prefixes and its executable's folder; real paths, and the named forms (see
    :func:`named_forms`) that lead to them."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    real = import_roots() | {os.path.realpath(p) for p in paths if p and os.path.exists(p)}
    named = {n for n, r in named_forms().items() if any(_contains(k, r) for k in real)}
    return real | named


def _contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def lock_targets(path: str, keep: set[str], top: bool = True) -> list[str]:
    """What to lock so that ``path`` is unreadable except for ``keep``: ``path`` itself, or,
    when it holds something in ``keep``, its other children (recursively). A symbolic link
    inside ``path`` is left alone (its target is not the protected thing)."""
    if not top and os.path.islink(path):
        return []
    path = os.path.realpath(path)
    if not any(_contains(path, k) for k in keep):
        return [path]
    if any(_contains(k, path) for k in keep) or not os.path.isdir(path):
        return []                                   # ``path`` is (inside) something to keep
    found = []
    for name in sorted(os.listdir(path)):
        found += lock_targets(os.path.join(path, name), keep, top=False)
    return found


def passages(path: str, keep: set[str]) -> list[str]:
    """The folders at or under ``path`` that hold something in ``keep`` without being inside
    it (a checkout holding the interpreter's ``.venv``): the worker must pass through them,
    never list them (see :func:`make_passage`)."""
    path = os.path.realpath(path)
    if (not os.path.isdir(path) or not any(_contains(path, k) for k in keep)
            or any(_contains(k, path) for k in keep)):
        return []
    found = [path]
    for name in sorted(os.listdir(path)):
        child = os.path.join(path, name)
        if not os.path.islink(child):
            found += passages(child, keep)
    return found


def make_passage(path: str, worker_uid: int | None = None) -> None:
    """Others may enter the folder ``path`` but not list or write it (mode ``?711``): the
    worker reaches the import root inside by name and nothing else (its siblings are
    locked). Root-owned if the worker user owned it."""
    info = os.lstat(path)
    if worker_uid is None or info.st_uid == worker_uid:
        os.chown(path, 0, 0)
    os.chmod(path, (info.st_mode & 0o700) | 0o011)


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
    probe forked as that user (:func:`autograder.sandbox.asuser.run_as_user`: never dumpable, it
    holds the grader's memory): the kernel answers, ACLs included. Missing paths are left out;
    if the probe fails, every path is reported open (assume the worst)."""
    from autograder.sandbox.asuser import run_as_user
    existing = [p for p in paths if os.path.lexists(p)]
    if not existing:
        return {}

    def probe() -> bytes:
        return "".join("%d%d" % (os.access(p, os.R_OK), os.access(p, os.X_OK)) for p in existing).encode() + b"\n"

    answer = (run_as_user(uid, gid, probe) or b"").decode(errors="replace")
    if len(answer) != 2 * len(existing) + 1:
        return {p: (True, True) for p in existing}
    return {p: (answer[2 * i] == "1", answer[2 * i + 1] == "1") for i, p in enumerate(existing)}


def readable_by(paths: list[str], uid: int, gid: int, passages_ok: tuple[str, ...] = ()) -> list[str]:
    """The paths ``uid`` could read (a file) or list or enter (a folder); the folders in
    ``passages_ok`` only count when listable."""
    return [p for p, (r, x) in access_as(paths, uid, gid).items()
            if r or (x and os.path.isdir(p) and os.path.realpath(p) not in passages_ok)]


def unreadable_interpreter(uid: int, gid: int) -> list[str]:
    """Parts of the interpreter (see :func:`import_roots`) that ``uid`` cannot read: the
    worker's lazy imports would fail there (e.g. a Python under a 0700 ``/root``)."""
    roots = sorted(import_roots())
    access = access_as(roots, uid, gid)
    return [p for p in roots if p in access and not (access[p][0] and
                                                    (access[p][1] or not os.path.isdir(p)))]


def ensure_unreadable(paths: list[str], uid: int, gid: int) -> list[str]:
    """Make sure the worker user can read none of ``paths`` (the grader is root): lock what
    it can read, check again. A path holding the interpreter's files (a results folder in the
    kit's checkout, next to its ``.venv``) becomes a passage (:func:`make_passage`) and its
    other children are locked. The paths locked; :class:`StillReadable` if any remain."""
    keep = interpreter_roots()
    through = tuple(sorted({f for p in paths if os.path.lexists(p) for f in passages(p, keep)}))
    exposed = readable_by(paths, uid, gid, through)
    if not exposed:
        return []
    locked = []
    for path in exposed:
        for target in lock_targets(path, keep):
            lock(target, worker_uid=uid)
            locked.append(target)
        for folder in passages(path, keep):
            make_passage(folder, worker_uid=uid)
    still = readable_by(paths, uid, gid, through)
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
