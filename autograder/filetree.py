"""Folder trees someone else controls, walked and removed without recursion.

A submission's folders, a worker's scratch files, a private copy of a student's upload: their
depth, their number of entries and their size are the student's choice. Every walk of such a
tree goes through this module:

* :func:`walk` yields a tree's entries (names sorted, parents first) from an explicit stack,
  never following a symbolic link, within :class:`Bounds` (depth, entries, bytes of regular
  files): past the depth a folder is reported and not entered; past the entries or bytes
  :class:`TooLarge` is raised.
* :func:`remove` deletes a file, link or whole tree the same way, bottom-up, however deep
  (one folder descriptor open at a time, every step relative to it: a path of any length,
  links removed and never followed) and never raises: what it could not remove is said in
  its :class:`Removal`.

The walk holds ONE open folder descriptor and a stack of names: a folder is entered with
``openat(name, O_NOFOLLOW)`` and left with ``openat("..")``, each checked against the
(device, inode) it was listed with, so a tree swapped underneath ends the walk
(:class:`TreeChanged`) rather than leading it elsewhere.
"""
from __future__ import annotations

import enum
import os
import stat
from dataclasses import dataclass, field
from typing import Callable, Iterator

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_RELATIVE_CALLS = {os.open, os.stat, os.unlink, os.rmdir} <= os.supports_dir_fd and os.scandir in os.supports_fd


@dataclass(frozen=True)
class Bounds:
    """How far a walk goes. ``depth``: folders nested below the root that are entered (the
    root's own entries are at depth 1; a folder at ``depth`` is listed, not entered).
    ``entries``: names listed in all. ``bytes``: the sizes of the regular files met, summed;
    None for a walk that reads no file."""
    depth: int
    entries: int
    bytes: int | None


# Removing: nothing is read, so no byte bound; deep and wide enough for anything a worker can
# make in its scratch space, small enough that a removal always ends.
REMOVAL = Bounds(depth=100_000, entries=2_000_000, bytes=None)


class TooLarge(Exception):
    """The tree has more entries or bytes than its :class:`Bounds` allow; the message is a
    predicate ("has more than 5000 files and folders", "is larger than 64 MB")."""


class TreeChanged(OSError):
    """A folder was not the one listed when the walk entered or left it."""


class Kind(enum.Enum):
    FOLDER = "folder"
    FILE = "file"              # a regular file
    LINK = "link"              # a symbolic link: never followed
    OTHER = "other"            # FIFO, socket, device


def kind_of(info: os.stat_result) -> Kind:
    if stat.S_ISDIR(info.st_mode):
        return Kind.FOLDER
    if stat.S_ISLNK(info.st_mode):
        return Kind.LINK
    return Kind.FILE if stat.S_ISREG(info.st_mode) else Kind.OTHER


@dataclass(frozen=True)
class Entry:
    """One entry of a walked tree. ``dir_fd`` (the folder holding it) is open only until the
    walk moves on; :meth:`open` uses it."""
    rel: str                   # "a/b/c.py", "/"-separated, inside the root
    name: str
    depth: int                 # 1 for the root's own entries
    info: os.stat_result       # lstat: the entry itself, never a link's target
    dir_fd: int
    too_deep: bool = False     # a folder at the depth bound: listed, not entered

    @property
    def kind(self) -> Kind:
        return kind_of(self.info)

    def open(self) -> int:
        """A read-only descriptor of this regular file, opened without following a link and
        checked to be the file listed (raises ``TreeChanged`` otherwise)."""
        fd = os.open(self.name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0), dir_fd=self.dir_fd)
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or _ident(now) != _ident(self.info):
            os.close(fd)
            raise TreeChanged(f"{self.rel} changed while the tree was walked")
        return fd


def _ident(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


class _Counter:
    def __init__(self, bounds: Bounds):
        self.bounds, self.entries, self.bytes = bounds, 0, 0

    def entry(self) -> None:
        self.entries += 1
        if self.entries > self.bounds.entries:
            raise TooLarge(f"has more than {self.bounds.entries} files and folders")

    def size(self, info: os.stat_result) -> None:
        if self.bounds.bytes is None or not stat.S_ISREG(info.st_mode):
            return
        self.bytes += info.st_size
        if self.bytes > self.bounds.bytes:
            raise TooLarge(f"is larger than {_size_text(self.bounds.bytes)}")


class _Cursor:
    """The folder a walk is in: one open descriptor, and the identities of the folders above."""

    def __init__(self, fd: int):
        self.fd = fd
        self.above: list[tuple[int, int]] = []

    def down(self, name: str, listed: os.stat_result) -> None:
        fd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=self.fd)
        if _ident(os.fstat(fd)) != _ident(listed):
            os.close(fd)
            raise TreeChanged(f"{name} changed while the tree was walked")
        self.above.append(_ident(os.fstat(self.fd)))
        os.close(self.fd)
        self.fd = fd

    def up(self) -> None:
        fd = os.open("..", _DIR_FLAGS, dir_fd=self.fd)
        expected = self.above.pop()
        if _ident(os.fstat(fd)) != expected:
            os.close(fd)
            raise TreeChanged("a folder was moved while the tree was walked")
        os.close(self.fd)
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _names(fd: int, counter: _Counter) -> list[str]:
    """The names in the folder ``fd``, counted as they are read, in reverse order (popped)."""
    names = []
    with os.scandir(fd) as it:
        for item in it:
            counter.entry()
            names.append(item.name)
    names.sort(reverse=True)
    return names


@dataclass
class _Frame:
    rel: str
    names: list[str]
    name: str = ""
    complete: bool = True      # removal: everything below was removed


def walk(root: str | os.PathLike, bounds: Bounds, *, skip: Callable[[str, Kind], bool] | None = None,
         follow_root: bool = False) -> Iterator[Entry]:
    """Every entry under the folder ``root``, parents before their contents, names sorted.

    ``skip(name, kind)``: entries not yielded and, for folders, not entered (still counted).
    ``follow_root``: the root itself may be reached through a link (the caller's choice of
    root; nothing below it is ever followed). Raises :class:`TooLarge` past ``bounds``,
    ``OSError`` when a folder cannot be listed."""
    fd = os.open(os.fspath(root), _DIR_FLAGS | (0 if follow_root else _NOFOLLOW))
    cursor = _Cursor(fd)
    counter = _Counter(bounds)
    try:
        frames = [_Frame("", _names(cursor.fd, counter))]
        while frames:
            frame = frames[-1]
            if not frame.names:
                frames.pop()
                if frames:
                    cursor.up()
                continue
            name = frame.names.pop()
            try:
                info = os.lstat(name, dir_fd=cursor.fd)
            except FileNotFoundError:
                continue
            kind = kind_of(info)
            if skip is not None and skip(name, kind):
                continue
            counter.size(info)
            rel = f"{frame.rel}/{name}" if frame.rel else name
            depth = len(frames)
            too_deep = kind is Kind.FOLDER and depth >= bounds.depth
            yield Entry(rel, name, depth, info, cursor.fd, too_deep)
            if kind is Kind.FOLDER and not too_deep:
                cursor.down(name, info)
                frames.append(_Frame(rel, _names(cursor.fd, counter)))
    finally:
        cursor.close()


@dataclass
class Removal:
    """What :func:`remove` did: entries removed, and why anything is left (the first
    :data:`MAX_PROBLEMS` reasons; ``unlisted`` counts the others)."""
    removed: int = 0
    problems: list[str] = field(default_factory=list)
    unlisted: int = 0

    @property
    def complete(self) -> bool:
        return not self.problems

    def note(self, rel: str, exc: BaseException) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{rel}: {_why(exc)}")
        else:
            self.unlisted += 1

    def summary(self) -> str:
        """One line for the staff log."""
        more = f" (and {self.unlisted} more)" if self.unlisted else ""
        return "; ".join(self.problems) + more


MAX_PROBLEMS = 10


def remove(path: str | os.PathLike, bounds: Bounds = REMOVAL) -> Removal:
    """Delete ``path`` (a file, a link, or a folder and everything in it) without recursion and
    without following links; a missing path is already removed. Never raises ``OSError``: what
    could not be removed is in ``Removal.problems``. The folder holding ``path`` is taken as
    given (the caller's: ``/tmp``, a stage folder)."""
    done = Removal()
    if not _RELATIVE_CALLS:
        return _remove_portably(os.fspath(path), done)
    parent, name = os.path.split(os.path.abspath(os.fspath(path)))
    try:
        parent_fd = os.open(parent, _DIR_FLAGS)
    except OSError as exc:
        done.note(parent, exc)
        return done
    cursor = _Cursor(parent_fd)
    try:
        _remove_below(cursor, name, bounds, done)
    except (OSError, TooLarge) as exc:          # the walk itself failed: stop here
        done.note(os.fspath(path), exc)
    finally:
        cursor.close()
    return done


def _remove_below(cursor: _Cursor, name: str, bounds: Bounds, done: Removal) -> None:
    try:
        info = os.lstat(name, dir_fd=cursor.fd)
    except FileNotFoundError:
        return
    if kind_of(info) is not Kind.FOLDER:
        os.unlink(name, dir_fd=cursor.fd)
        done.removed += 1
        return
    counter = _Counter(bounds)
    cursor.down(name, info)
    frames = [_Frame(name, _names(cursor.fd, counter), name=name)]
    while frames:
        frame = frames[-1]
        if frame.names:
            _remove_entry(cursor, frame, frames, counter, bounds, done)
            continue
        frames.pop()
        cursor.up()
        if frame.complete:
            _try(lambda: os.rmdir(frame.name, dir_fd=cursor.fd), frame.rel, done)
        elif frames:
            frames[-1].complete = False


def _remove_entry(cursor: _Cursor, frame: _Frame, frames: list[_Frame], counter: _Counter,
                  bounds: Bounds, done: Removal) -> None:
    child = frame.names.pop()
    rel = f"{frame.rel}/{child}"
    try:
        info = os.lstat(child, dir_fd=cursor.fd)
    except FileNotFoundError:
        return
    except OSError as exc:
        frame.complete = False
        done.note(rel, exc)
        return
    if kind_of(info) is not Kind.FOLDER:
        if not _try(lambda: os.unlink(child, dir_fd=cursor.fd), rel, done):
            frame.complete = False
        return
    if len(frames) >= bounds.depth:
        frame.complete = False
        done.note(rel, TooLarge(f"nested more than {bounds.depth} folders deep (left)"))
        return
    try:
        cursor.down(child, info)
    except TreeChanged:
        raise
    except OSError as exc:                    # a folder we may not enter: left, the rest goes on
        frame.complete = False
        done.note(rel, exc)
        return
    try:
        names = _names(cursor.fd, counter)
    except OSError as exc:                    # nor list
        cursor.up()
        frame.complete = False
        done.note(rel, exc)
        return
    frames.append(_Frame(rel, names, name=child))


def _remove_portably(path: str, done: Removal) -> Removal:
    """Where calls relative to a folder descriptor do not exist (Windows: a student's own
    ``check``, on their own files): the standard library's removal, its failures noted."""
    import shutil

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=lambda _f, p, info: done.note(p, info[1]))
        elif os.path.lexists(path):
            os.unlink(path)
    except (OSError, RecursionError) as exc:
        done.note(path, exc)
    return done


def _try(action: Callable[[], None], rel: str, done: Removal) -> bool:
    try:
        action()
    except FileNotFoundError:
        return True
    except OSError as exc:
        done.note(rel, exc)
        return False
    done.removed += 1
    return True


def _size_text(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n} bytes"


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else (str(exc) or type(exc).__name__)
