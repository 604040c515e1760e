"""Reading a submission without trusting it: list its files, then read each on demand, bounded.

Links are never followed (a symbolic link, a hard link, a FIFO or a zip member that is a link
is *refused*, which costs only that exercise), sizes come from ``lstat`` or the zip's
directory before a byte is read, and one :class:`ReadAllowance` caps the decompressed bytes
and the entries of the whole submission (folders, zips, zips inside folders, notebooks).
"""
from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from autograder import filetree, textsafe
from autograder.zipnames import member_name, open_zip

MAX_FILE_BYTES = 2 * 1024 * 1024            # one .py file, or a notebook's code cells (outputs never count)
MAX_TOTAL_BYTES = 50 * 1024 * 1024          # everything read or decompressed, whole submission
MAX_ENTRIES = 10_000                        # files, folders and zip members, whole submission
MAX_ZIP_DIRECTORY_BYTES = 4 * 1024 * 1024   # a zip's central directory (parsed into memory)
MAX_DEPTH = 32                              # folder nesting
MAX_LISTED = 2 * MAX_ENTRIES                # names listed on disk, skipped ones (.git, …) too
MAX_NOTICED = 100                           # other files kept to explain a missing one
NOTICED_SUFFIXES = frozenset({".py", ".ipynb", ".zip", ".txt", ".pyw", "", ".tar", ".gz", ".tgz", ".rar", ".7z"})
_SKIP_DIRS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git", "node_modules"}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class Refused(Exception):
    """A file that is not read; the message names it and says why."""


class TooBig(Refused):
    """A file larger than the limit it was read with."""


class ReadAllowance:
    """The one cap on what a whole submission may make the grader read or decompress."""

    def __init__(self, max_bytes: int = MAX_TOTAL_BYTES, max_entries: int = MAX_ENTRIES):
        self.bytes_left, self.entries_left = max_bytes, max_entries
        self.max_bytes, self.max_entries = max_bytes, max_entries

    def entry(self) -> bool:
        """Count one listed entry; False once the submission has too many."""
        self.entries_left -= 1
        return self.entries_left >= 0

    def charge(self, size: int, what: str) -> None:
        if size > self.bytes_left:
            raise Refused(f"{what}: the submission is larger than "
                          f"{self.max_bytes // (1024 * 1024)} MB in total")
        self.bytes_left -= size


@dataclass
class UnreadFile:
    """A file of the submission, not read yet: ``read(limit)`` returns at most ``limit``
    bytes or raises ``Refused``; ``refusal`` is set for a link or another non-file."""
    read: Callable[[int], bytes] | None = None
    refusal: str | None = None


@dataclass(frozen=True)
class Noticed:
    """A file that is not a graded one but might have been meant as one (a ``.py``, a
    notebook, an archive, a text file): named when an exercise's file is missing."""
    rel: str                     # path inside the submission, escaped
    in_zip: bool                 # a member of a zip (a zip there is a zip inside a zip)


@dataclass
class Listing:
    """What a submission holds, by path inside it; nothing is read yet."""
    files: dict[str, UnreadFile] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)     # links to folders, unreadable zips …
    truncated: str | None = None                         # why the listing stopped early
    noticed: list[Noticed] = field(default_factory=list)  # at most MAX_NOTICED

    def notice(self, rel: str, in_zip: bool) -> None:
        if len(self.noticed) < MAX_NOTICED and PurePosixPath(rel).suffix.lower() in NOTICED_SUFFIXES:
            self.noticed.append(Noticed(rel, in_zip))


# --------------------------------------------------------------------------- listing

def list_submission(path: Path, wanted: set[str], budget: ReadAllowance, listing: Listing) -> None:
    """Add to ``listing`` every file of the submission at ``path`` (a folder, a zip or one
    file), unread; files named in ``wanted`` become readable :class:`UnreadFile` entries."""
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode) or (stat.S_ISLNK(info.st_mode) and path.is_dir()):
        _walk(path, wanted, budget, listing)          # the root itself is the grader's choice
    elif path.suffix == ".zip":
        _zip_members(path, "", wanted, budget, listing)
    else:
        listing.files[textsafe.name(path.name, None)] = _disk_entry(path, textsafe.name(path.name, None))
        if path.name not in wanted:
            listing.notice(textsafe.name(path.name, None), False)


def _walk(root: Path, wanted: set[str], budget: ReadAllowance, listing: Listing) -> None:
    """Every file under ``root`` without following links (:func:`autograder.filetree.walk`:
    no recursion, depth-capped)."""
    bounds = filetree.Bounds(depth=MAX_DEPTH, entries=MAX_LISTED, bytes=None)   # bytes: charged when read
    try:
        for child in filetree.walk(root, bounds, skip=lambda name, _kind: _skipped(PurePosixPath(name)),
                                   follow_root=True):
            if not budget.entry():
                listing.truncated = f"the submission has more than {budget.max_entries} files"
                return
            _list_entry(root, child, wanted, budget, listing)
    except filetree.TooLarge:
        listing.truncated = f"the submission has more than {budget.max_entries} files"


def _list_entry(root: Path, child: filetree.Entry, wanted: set[str], budget: ReadAllowance,
                listing: Listing) -> None:
    shown = textsafe.name(child.rel, None)                   # names are escaped where they enter
    kind = child.kind
    if kind is filetree.Kind.LINK:
        if child.name in wanted:
            listing.files[shown] = UnreadFile(refusal=f"{shown} is a symbolic link")
        else:
            listing.skipped.append(f"{shown} (a symbolic link, not followed)")
    elif kind is filetree.Kind.FOLDER:
        if child.too_deep:
            listing.skipped.append(f"{shown}/ (folders nested more than {MAX_DEPTH} deep)")
    elif child.name in wanted:
        listing.files[shown] = _disk_entry(root / child.rel, shown)
    elif child.name.endswith(".zip") and kind is filetree.Kind.FILE:
        _zip_members(root / child.rel, f"{shown}/", wanted, budget, listing)
    else:
        listing.notice(shown, False)


def _skipped(rel: PurePosixPath) -> bool:
    return any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts)


def _disk_entry(path: Path, rel: str) -> UnreadFile:
    try:
        info = os.lstat(path)
    except OSError:
        return UnreadFile(refusal=f"{rel} could not be read")
    problem = _not_plain(info, rel)
    if problem:
        return UnreadFile(refusal=problem)
    return UnreadFile(read=lambda limit: _read_disk(path, rel, info, limit))


def _not_plain(info: os.stat_result, rel: str) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return f"{rel} is a symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return f"{rel} is not a regular file"
    if info.st_nlink > 1:
        return f"{rel} is a hard link (a file with {info.st_nlink} names)"
    return None


def _read_disk(path: Path, rel: str, listed: os.stat_result, limit: int) -> bytes:
    """At most ``limit`` bytes of a plain file, opened without following a link; the file
    must still be the one that was listed (no swap between listing and reading)."""
    if listed.st_size > limit:
        raise TooBig(f"{rel} is larger than {size_text(limit)}")
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        now = os.fstat(fd)
        problem = _not_plain(now, rel)
        if problem or (now.st_ino, now.st_dev) != (listed.st_ino, listed.st_dev):
            raise Refused(problem or f"{rel} changed while it was read")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise TooBig(f"{rel} is larger than {size_text(limit)}")
    return data


def _zip_members(path: Path, prefix: str, wanted: set[str], budget: ReadAllowance, listing: Listing) -> None:
    """The graded members of a zip, each read on demand (never a link, never outside it)."""
    where = prefix.rstrip("/") or path.name
    try:
        if _not_plain(os.lstat(path), where):
            listing.skipped.append(f"{where} ({_not_plain(os.lstat(path), where)})")
            return
        directory = _zip_directory_size(path)
        if directory is None or directory > MAX_ZIP_DIRECTORY_BYTES:
            listing.skipped.append(f"{where} (not a zip, or a zip with too many entries)")
            return
        budget.charge(directory, where)
        with open_zip(path) as archive:
            infos = archive.infolist()
    except Refused as exc:
        listing.skipped.append(str(exc))
        return
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        listing.skipped.append(f"{where} (not a readable zip)")
        return
    for info in infos:
        if info.is_dir():
            continue
        if not budget.entry():
            listing.truncated = f"the submission has more than {budget.max_entries} files"
            return
        rel = PurePosixPath(member_name(info).replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts or _skipped(rel):
            continue
        name = f"{prefix}{textsafe.name(rel.as_posix(), None)}"
        if rel.name not in wanted:
            listing.notice(name, True)
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            listing.files[name] = UnreadFile(refusal=f"{name} is a symbolic link (in a zip)")
        else:
            listing.files[name] = UnreadFile(read=lambda limit, i=info, n=name: _read_member(path, i, n, limit))


def _zip_directory_size(path: Path) -> int | None:
    """Size of a zip's central directory (what ``ZipFile`` parses), before opening it."""
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:                           # private helper gone: use the file size
        return os.lstat(path).st_size
    with open(path, "rb") as fp:
        record = end_record(fp)
    return None if not record else int(record[zipfile._ECD_SIZE])


def _read_member(path: Path, info: zipfile.ZipInfo, name: str, limit: int) -> bytes:
    if info.file_size > limit:
        raise TooBig(f"{name} is larger than {size_text(limit)}")
    try:
        with open_zip(path) as archive, archive.open(info) as member:
            data = member.read(limit + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise Refused(f"{name} could not be read from its zip ({type(exc).__name__})") from None
    if len(data) > limit:
        raise TooBig(f"{name} is larger than {size_text(limit)}")
    return data


def size_text(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n // 1024} KB"
