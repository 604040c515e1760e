"""Submission intake: a folder, a zip or single files -> one source text per exercise.

Only the graded files are ever read as code (``attention.py`` … or a notebook with the
same stem); everything else in a submission (``conftest.py``, ``numpy.py``,
``__pycache__``) is ignored. Nothing here executes student code: sources are parsed with
``ast`` to report syntax errors early and to find banned APIs.

Everything read is bounded before it is read, and only files that really lie inside the
submission are read: links are never followed (a symbolic link, a hard link, a FIFO or a
zip member that is a link is *refused*, which costs only that exercise), sizes come from
``lstat`` or the zip's directory, and one :class:`ReadAllowance` caps the decompressed bytes and
the entries of the whole submission (folders, zips, zips inside folders, notebooks).
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from autograder import textsafe
from autograder.contract import DEFAULT, Exercise, banned_operators
from autograder.zipnames import open_zip

MAX_FILE_BYTES = 2 * 1024 * 1024            # one .py file (and a notebook's extracted code)
MAX_NOTEBOOK_BYTES = 8 * 1024 * 1024        # one .ipynb (outputs such as plots make them large)
MAX_TOTAL_BYTES = 50 * 1024 * 1024          # everything read or decompressed, whole submission
MAX_ENTRIES = 10_000                        # files, folders and zip members, whole submission
MAX_ZIP_DIRECTORY_BYTES = 4 * 1024 * 1024   # a zip's central directory (parsed into memory)
MAX_DEPTH = 32                              # folder nesting
_SKIP_DIRS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git", "node_modules"}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass
class Found:
    """One exercise's file. ``kind``: "found" (``source`` set), "missing" or "refused"
    (a file is there but is not read: a link, too large, an unreadable notebook …);
    ``problem`` says why in words for the student."""
    exercise: Exercise
    source: str | None = None             # Python source, when found and readable
    origin: str = ""                       # path inside the submission, for messages
    problem: str | None = None             # why the exercise cannot be graded
    notes: list[str] = field(default_factory=list)
    banned: list[str] = field(default_factory=list)
    refused: bool = False                  # a file was there but was not accepted

    @property
    def kind(self) -> str:
        if self.source is not None:
            return "found"
        return "refused" if self.refused else "missing"


@dataclass
class Submission:
    found: dict[str, Found]                # by exercise id


class Refused(Exception):
    """A file that is not read; the message names it and says why."""


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


@dataclass
class Listing:
    files: dict[str, UnreadFile] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)     # links to folders, unreadable zips …
    truncated: str | None = None                         # why the listing stopped early


def collect(path: str | Path, exercises: tuple[Exercise, ...] = DEFAULT,
            budget: ReadAllowance | None = None) -> Submission:
    """Find and read each exercise's file in a submission (folder, .zip, .py or .ipynb)."""
    budget = budget or ReadAllowance()
    wanted = {name for ex in exercises for name in (ex.filename, ex.notebook)}
    listing = Listing()
    try:
        _list(Path(path), wanted, budget, listing)
    except FileNotFoundError:
        pass                                          # nothing submitted: every file is missing
    except (OSError, RecursionError, ValueError) as exc:
        listing.truncated = f"the submission could not be listed ({type(exc).__name__})"
    return Submission({ex.id: _find_safely(ex, listing, budget) for ex in exercises})


# --------------------------------------------------------------------------- listing

def _list(path: Path, wanted: set[str], budget: ReadAllowance, listing: Listing) -> None:
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode) or (stat.S_ISLNK(info.st_mode) and path.is_dir()):
        _walk(path, wanted, budget, listing)          # the root itself is the grader's choice
    elif path.suffix == ".zip":
        _zip_members(path, "", wanted, budget, listing)
    else:
        listing.files[textsafe.name(path.name, None)] = _disk_entry(path, textsafe.name(path.name, None))


def _walk(root: Path, wanted: set[str], budget: ReadAllowance, listing: Listing) -> None:
    """Every file under ``root`` without following links (iterative, depth-capped)."""
    stack = [(root, PurePosixPath(), 0)]
    while stack:
        folder, rel_folder, depth = stack.pop()
        with os.scandir(folder) as it:
            children = sorted(it, key=lambda e: e.name)
        for child in children:
            rel = rel_folder / child.name
            shown = textsafe.name(rel.as_posix(), None)      # names are escaped where they enter
            if _skipped(PurePosixPath(child.name)):
                continue
            if not budget.entry():
                listing.truncated = f"the submission has more than {budget.max_entries} files"
                return
            if child.is_symlink():
                if child.name in wanted:
                    listing.files[shown] = UnreadFile(refusal=f"{shown} is a symbolic link")
                else:
                    listing.skipped.append(f"{shown} (a symbolic link, not followed)")
            elif child.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    listing.skipped.append(f"{shown}/ (folders nested more than {MAX_DEPTH} deep)")
                else:
                    stack.append((Path(child.path), rel, depth + 1))
            elif child.name in wanted:
                listing.files[shown] = _disk_entry(Path(child.path), shown)
            elif child.name.endswith(".zip") and child.is_file(follow_symlinks=False):
                _zip_members(Path(child.path), f"{shown}/", wanted, budget, listing)


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
        raise Refused(f"{rel} is larger than {_size(limit)}")
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
        raise Refused(f"{rel} is larger than {_size(limit)}")
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
        rel = PurePosixPath(info.filename.replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts or _skipped(rel) or rel.name not in wanted:
            continue
        name = f"{prefix}{textsafe.name(rel.as_posix(), None)}"
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
        raise Refused(f"{name} is larger than {_size(limit)}")
    try:
        with open_zip(path) as archive, archive.open(info) as member:
            data = member.read(limit + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise Refused(f"{name} could not be read from its zip ({type(exc).__name__})") from None
    if len(data) > limit:
        raise Refused(f"{name} is larger than {_size(limit)}")
    return data


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n // 1024} KB"


# --------------------------------------------------------------------------- choosing a file

def _find_safely(ex: Exercise, listing: Listing, budget: ReadAllowance) -> Found:
    """``_find``, where anything unexpected costs only this exercise."""
    try:
        return _find(ex, listing, budget)
    except (Refused, OSError, ValueError, RecursionError, MemoryError) as exc:
        message = str(exc) if isinstance(exc, Refused) else f"could not be read ({type(exc).__name__})"
        return Found(ex, origin=ex.filename, problem=f"refused: {message}", refused=True)


def _find(ex: Exercise, listing: Listing, budget: ReadAllowance) -> Found:
    files = listing.files
    candidates = [rel for rel in files if PurePosixPath(rel).name in (ex.filename, ex.notebook)]
    if not candidates:
        return _missing(ex, listing)
    # shallowest first, .py before .ipynb, then alphabetical: deterministic
    candidates.sort(key=lambda rel: (rel.count("/"), rel.endswith(".ipynb"), rel))
    chosen = candidates[0]
    found = Found(ex, origin=chosen)
    if len(candidates) > 1:
        found.notes.append(f"several candidates for {ex.filename}; graded {_printable(chosen)}")
    entry = files[chosen]
    if entry.refusal or entry.read is None:
        return _refuse(found, entry.refusal or f"{chosen} could not be read")
    notebook = chosen.endswith(".ipynb")
    limit = MAX_NOTEBOOK_BYTES if notebook else MAX_FILE_BYTES
    try:
        data = entry.read(limit)
        budget.charge(len(data), chosen)
    except Refused as exc:
        return _refuse(found, str(exc))
    text = data.decode("utf-8-sig", errors="replace")         # a BOM (Windows editors) is fine
    if notebook:
        text, problem = notebook_to_source(text)
        if problem is None and len(text) > MAX_FILE_BYTES:
            problem = f"has more than {_size(MAX_FILE_BYTES)} of code"
        if problem:
            return _refuse(found, f"{chosen} {problem}")
    found.source = text
    found.banned = find_banned(text, ex)
    return found


def _refuse(found: Found, why: str) -> Found:
    found.problem, found.refused = f"refused: {_printable(why)}", True
    return found


def _printable(text: str) -> str:
    """Messages stay on one line: control characters (a newline in a folder name) are shown
    escaped (names are escaped when listed already: this changes nothing in them)."""
    return textsafe.one_line(text, None)


def _missing(ex: Exercise, listing: Listing) -> Found:
    found = Found(ex, problem=f"{ex.filename} was not found in the submission "
                              f"(expected a file named exactly {ex.filename} or {ex.notebook})")
    if listing.truncated:
        return _refuse(found, f"{listing.truncated}; {ex.filename} was not found in the part read")
    links = [s.split(" (")[0] for s in listing.skipped if "symbolic link" in s]
    if links:
        return _refuse(found, f"{', '.join(links[:5])} is a symbolic link (never followed); "
                              f"{ex.filename} was not found elsewhere")
    return found


# --------------------------------------------------------------------------- notebooks

def notebook_to_source(text: str) -> tuple[str, str | None]:
    """The Python in a notebook: nbgrader solution cells if marked, else all code cells.

    IPython magics (``%...``, ``%%cell``) and shell lines (``!...``) are dropped. A
    malformed notebook gives ``("", problem)``, never an exception.
    """
    try:
        nb = json.loads(text)
        cells = _code_cells(nb)
    except (ValueError, RecursionError, TypeError, AttributeError):
        return "", "is not a readable Jupyter notebook"
    except _Malformed as exc:
        return "", f"is not a readable Jupyter notebook ({exc})"
    marked = [(c, s) for c, s in cells if _is_solution(c)]
    chunks = []
    for _, src in marked or cells:
        if src.lstrip().startswith("%%"):
            continue
        lines = [_without_magic(ln) for ln in src.splitlines()]
        chunks.append("\n".join(lines))
    # Jupyter compiles each cell on its own, so `from __future__ import ...` is legal at the
    # top of any cell; in one file it must come first. Hoist those lines (one line added).
    # a JSON "\ud800" is a lone surrogate, which compile() refuses: in a string literal its
    # escape means the same, elsewhere it is a syntax error either way
    chunks = [_SURROGATES.sub(lambda m: textsafe.escape_char(m.group()), chunk) for chunk in chunks]
    futures = sorted({m.group(1).strip() for chunk in chunks for m in _FUTURE.finditer(chunk)})
    chunks = [_FUTURE.sub("pass  # __future__ import moved to the top", chunk) for chunk in chunks]
    head = f"from __future__ import {', '.join(futures)}\n" if futures else ""
    return head + "\n\n".join(chunks) + "\n", None


class _Malformed(Exception):
    pass


def _code_cells(nb: object) -> list[tuple[dict, str]]:
    """``(cell, source text)`` of every code cell; strict about what a notebook holds."""
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise _Malformed("no list of cells")
    out = []
    for number, cell in enumerate(nb.get("cells", []), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        if not isinstance(src, str):
            raise _Malformed(f"code cell {number}: its source is not text")
        out.append((cell, src))
    return out


def _is_solution(cell: dict) -> bool:
    """nbgrader's ``solution`` flag; metadata of any other shape counts as unmarked."""
    metadata = cell.get("metadata")
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return isinstance(nbgrader, dict) and bool(nbgrader.get("solution"))


_SURROGATES = re.compile(r"[\ud800-\udfff]")
_FUTURE = re.compile(r"^from __future__ import ([\w, ]+?)[ \t]*(?:#.*)?$", re.MULTILINE)


def _without_magic(line: str) -> str:
    """A magic or shell line becomes ``pass`` at its indentation, so blocks still parse."""
    stripped = line.lstrip()
    if stripped.startswith(("%", "!")):
        return line[: len(line) - len(stripped)] + "pass  # notebook magic removed"
    return line


# --------------------------------------------------------------------------- banned APIs

def find_banned(source: str, ex: Exercise) -> list[str]:
    """Human-readable uses of APIs the exercise forbids, e.g. ``"line 12: torch.nn.MultiheadAttention"``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []                        # reported as an import error by the worker
    aliases = _import_aliases(tree)
    operators = banned_operators(ex)              # other doors: torch.ops.aten.X, torch._C._nn.X
    hits: list[str] = []
    for node in ast.walk(tree):
        dotted = _dotted(node, aliases)
        if dotted and any(dotted == b or dotted.startswith(b + ".") for b in ex.banned):
            hits.append(f"line {node.lineno}: {dotted}")
        elif dotted and dotted.startswith("torch.") and any(p in operators for p in dotted.split(".")[1:]):
            hits.append(f"line {node.lineno}: {dotted}")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    callers = {name: name for name in ex.numpy_only if name in functions}   # function -> its caller
    for name in ex.numpy_only:
        for helper, via in _reachable(name, functions).items():
            callers.setdefault(helper, via)
    for name, via in callers.items():
        for node in ast.walk(functions[name]):
            dotted = _dotted(node, aliases)
            if dotted and dotted.split(".")[0] in ("torch", "scipy"):
                where = name if via == name else f"{name}, called from {via}"
                hits.append(f"line {node.lineno}: {dotted} inside {where} (NumPy only)")
                break
    return sorted(set(hits), key=lambda h: (int(h.split(":")[0].split()[1]), h))


def _reachable(name: str, functions: dict[str, ast.FunctionDef]) -> dict[str, str]:
    """The module-level functions ``name`` calls, directly or through others, each with the
    function that calls it: a NumPy-only rule covers the helpers too."""
    found: dict[str, str] = {}
    queue = [name] if name in functions else []
    while queue:
        caller = queue.pop()
        for node in ast.walk(functions[caller]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = node.func.id
                if callee in functions and callee != name and callee not in found:
                    found[callee] = caller
                    queue.append(callee)
    return found


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """``F.scaled_dot_product_attention`` -> ``torch.nn.functional.scaled_dot_product_attention``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        base = _dotted(node.args[0], aliases)
        return f"{base}.{node.args[1].value}" if base else None
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])
