"""A worker's files on the grader's disk, capped: its home watched while the worker lives.

At the *namespaces* level the worker writes into a root of its own on a size-capped tmpfs.
At the other levels (*user*, Gradescope's; *landlock*, a TA's without root; *process*) its
home is a folder on the grader's disk, and ``RLIMIT_FSIZE`` caps one file, not how many: a
call could write file after file until the disk, which ``results.json`` needs too, is full.

:class:`HomeWatch` is a thread of the grader that measures, every ``interval`` seconds, what
the worker holds on disk: the allocated size of every file under its home (plus
``ENTRY_BYTES`` per entry, so a million empty files count), and of the files its processes
hold open for writing elsewhere or deleted (``/proc/<pid>/fd``, the worker and its
descendants). When
that passes the cap (``SandboxConfig.disk_mb``) it kills the worker: the call fails and says
why (:attr:`HomeWatch.exceeded`), and the next call starts a fresh worker. A walk stops
counting once past the cap; it goes by directory descriptors (no path length limit), opens
again the folders the worker closed to its own user, and counts as past the cap an entry
count past ``MAX_ENTRIES`` and anything it cannot read.

What it cannot see: files of a worker process that made itself undumpable (its
``/proc/<pid>/fd`` is then closed to a grader of the same user), and writes between two
polls (at most what the disk takes in ``interval`` seconds).
"""
from __future__ import annotations

import os
import stat
import threading
import time
from typing import Callable, Iterator

ENTRY_BYTES = 1024            # what one directory entry is counted as, whatever its size
MAX_ENTRIES = 100_000         # more entries than this in a home: past any cap
UNREADABLE = 1 << 62          # what a folder or entry that cannot be read counts as
POLL_S = 0.25


def held_bytes(home: str, pid: int | None, limit: int) -> int:
    """What a worker holds on disk (see the module), counted until it passes ``limit``."""
    total = 0
    for size in _home_sizes(home):
        total += size
        if total > limit:
            return total
    seen: set[tuple[int, int]] = set()
    for size in _open_file_sizes(pid, home, seen):
        total += size
        if total > limit:
            break
    return total


def _allocated(info: os.stat_result) -> int:
    blocks = getattr(info, "st_blocks", None)
    return blocks * 512 if blocks is not None else info.st_size


def _home_sizes(home: str) -> Iterator[int]:
    """Each entry's counted size under ``home``, walked one folder descriptor at a time (down
    by name, back up by ``..``): no path is ever longer than a name and no descriptor is held
    per level, however deep the folders. A folder the worker closed to its own user is opened
    again (the grader runs as that user or as root); what cannot be read counts as past any
    cap, and so does an entry count past ``MAX_ENTRIES``."""
    try:
        folder = os.open(home, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    entries, pending = 0, []                   # pending: per level, the subfolders left to visit
    try:
        while True:
            listing = _listing(folder)
            if listing is None:
                yield UNREADABLE
                return
            subfolders = []
            for entry in listing:
                entries += 1
                if entries > MAX_ENTRIES:
                    yield UNREADABLE
                    return
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:          # removed since it was listed (a temporary
                    continue                       # file renamed into place): nothing to count
                except OSError:
                    yield UNREADABLE
                    return
                yield ENTRY_BYTES + _allocated(info)
                if stat.S_ISDIR(info.st_mode):
                    subfolders.append(entry.name)
            pending.append(subfolders)
            while True:                            # on to the next folder still there
                while pending and not pending[-1] and folder is not None:   # this level is done: back up
                    pending.pop()
                    if pending:
                        up = _open_folder("..", folder)
                        folder = _replace(folder, None if up == _VANISHED else up)
                if folder is None:
                    yield UNREADABLE
                    return
                if not pending:
                    return
                child = _open_folder(pending[-1].pop(), folder)
                if child != _VANISHED:             # a folder removed since it was listed: skipped
                    folder = _replace(folder, child)
                    break
            if folder is None:
                yield UNREADABLE
                return
    finally:
        if folder is not None:
            os.close(folder)


def _listing(folder: int) -> list[os.DirEntry] | None:
    """The entries of ``folder``, made readable and searchable for its owner first."""
    try:
        mode = os.fstat(folder).st_mode
        if mode & 0o700 != 0o700:
            os.fchmod(folder, stat.S_IMODE(mode) | 0o700)
        return list(os.scandir(folder))
    except OSError:
        return None


def _replace(old: int, new: int | None) -> int | None:
    os.close(old)
    return new


_VANISHED = -1                # _open_folder: the folder is no longer there (never a descriptor)


def _open_folder(name: str, parent: int) -> int | None:
    """A descriptor of ``parent``'s folder ``name``; ``_VANISHED`` when it was removed (the
    worker's files change while they are counted); None when it cannot be opened."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return _VANISHED
    except PermissionError:
        try:
            os.chmod(name, 0o700, dir_fd=parent)
            return os.open(name, flags, dir_fd=parent)
        except FileNotFoundError:
            return _VANISHED
        except OSError:
            return None
    except OSError:
        return None


def _descendants(pid: int) -> Iterator[int]:
    """``pid`` and every process below it (``/proc/<pid>/task/<tid>/children``)."""
    pending, seen = [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    pending += [int(child) for child in handle.read().split()]
            except (OSError, ValueError):
                continue


def _opened_for_writing(fdinfo: str) -> bool:
    try:
        with open(fdinfo) as handle:
            flags = next((line.split()[1] for line in handle if line.startswith("flags:")), "0")
        return int(flags, 8) & (os.O_WRONLY | os.O_RDWR) != 0
    except (OSError, ValueError, IndexError):
        return False


def _open_file_sizes(pid: int | None, home: str, seen: set[tuple[int, int]]) -> Iterator[int]:
    """Allocated sizes of the regular files the worker's processes hold open for writing
    outside its home (or deleted), each file once."""
    if pid is None or not os.path.isdir("/proc"):
        return
    home_prefix = os.path.join(os.path.realpath(home), "")
    for process in _descendants(pid):
        folder = f"/proc/{process}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{folder}/{fd}")
                info = os.stat(f"{folder}/{fd}")
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) in seen \
                    or not _opened_for_writing(f"/proc/{process}/fdinfo/{fd}"):
                continue
            seen.add((info.st_dev, info.st_ino))
            if target.startswith(home_prefix) and not target.endswith(" (deleted)"):
                continue                               # counted with the home
            yield _allocated(info)


class HomeWatch:
    """Polls what one worker holds on disk; past ``limit_bytes``, calls ``stop_worker`` once."""

    def __init__(self, home: str, limit_bytes: int, stop_worker: Callable[[], None],
                 pid: Callable[[], int | None], interval: float = POLL_S) -> None:
        self.home, self.limit = home, limit_bytes
        self.exceeded = 0                      # bytes held when the worker was stopped (0: not)
        self._stop_worker, self._pid, self._interval = stop_worker, pid, interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ag-home-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        wait = self._interval
        while not self._done.wait(wait):
            started = time.monotonic()
            held = held_bytes(self.home, self._pid(), self.limit)
            if held > self.limit:
                self.exceeded = held
                self._stop_worker()
                return
            # a home of many folders takes longer to measure: the grader spends at most a
            # fifth of a core on it
            wait = max(self._interval, 4 * (time.monotonic() - started))

    def message(self) -> str:
        return (f"wrote more than {self.limit // (1024 * 1024)} MB of files (the limit of what your "
                "code may keep on disk while it is graded), so it was stopped")

    def close(self) -> None:
        self._done.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
