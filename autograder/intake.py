"""Submission intake: a folder, a zip or single files -> one source text per exercise.

Only the graded files are ever read as code (``attention.py`` … or a notebook with the
same stem); everything else in a submission (``conftest.py``, ``numpy.py``,
``__pycache__``) is ignored. Nothing here executes student code: sources are parsed with
``ast`` to report syntax errors early and to find banned APIs.
"""
from __future__ import annotations

import ast
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder.contract import EXERCISES, Exercise

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_ZIP_MEMBERS = 2000
MAX_ZIP_BYTES = 200 * 1024 * 1024
_SKIP_DIRS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git", "node_modules"}


@dataclass
class Found:
    exercise: Exercise
    source: str | None = None             # Python source, when found and readable
    origin: str = ""                       # path inside the submission, for messages
    problem: str | None = None             # why the exercise cannot be graded
    notes: list[str] = field(default_factory=list)
    banned: list[str] = field(default_factory=list)


@dataclass
class Submission:
    found: dict[str, Found]                # by exercise id

    def modules(self) -> dict[str, Found]:
        return {f.exercise.module: f for f in self.found.values()}


def collect(path: str | Path, exercises: tuple[Exercise, ...] = EXERCISES) -> Submission:
    """Find and read each exercise's file in a submission (folder, .zip, .py or .ipynb)."""
    files = _list_files(Path(path))
    return Submission({ex.id: _find(ex, files) for ex in exercises})


# --------------------------------------------------------------------------- listing

def _list_files(path: Path) -> dict[str, bytes | Path]:
    """Relative posix path -> file (a Path on disk, or bytes read from a zip)."""
    if path.is_dir():
        out: dict[str, bytes | Path] = {}
        for item in sorted(path.rglob("*")):
            rel = item.relative_to(path)
            if item.is_file() and not _skipped(PurePosixPath(rel.as_posix())):
                if item.suffix == ".zip":
                    out.update({f"{rel.as_posix()}/{k}": v for k, v in _zip_members(item).items()})
                else:
                    out[rel.as_posix()] = item
        return out
    if path.suffix == ".zip":
        return _zip_members(path)
    if path.is_file():
        return {path.name: path}
    return {}


def _skipped(rel: PurePosixPath) -> bool:
    return any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts)


def _zip_members(path: Path) -> dict[str, bytes | Path]:
    out: dict[str, bytes | Path] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [i for i in archive.infolist() if not i.is_dir()][:MAX_ZIP_MEMBERS]
            total = 0
            for info in infos:
                rel = PurePosixPath(info.filename.replace("\\", "/"))
                if rel.is_absolute() or ".." in rel.parts or _skipped(rel):
                    continue
                if not rel.name.endswith((".py", ".ipynb")) or info.file_size > MAX_FILE_BYTES:
                    continue
                total += info.file_size
                if total > MAX_ZIP_BYTES:
                    break
                out[rel.as_posix()] = archive.read(info)
    except (zipfile.BadZipFile, OSError):
        pass
    return out


# --------------------------------------------------------------------------- choosing a file

def _find(ex: Exercise, files: dict[str, bytes | Path]) -> Found:
    candidates = [rel for rel in files if PurePosixPath(rel).name in (ex.filename, ex.notebook)]
    if not candidates:
        return Found(ex, problem=f"{ex.filename} was not found in the submission "
                                 f"(expected a file named exactly {ex.filename} or {ex.notebook})")
    # shallowest first, .py before .ipynb, then alphabetical: deterministic
    candidates.sort(key=lambda rel: (rel.count("/"), rel.endswith(".ipynb"), rel))
    chosen = candidates[0]
    found = Found(ex, origin=chosen)
    if len(candidates) > 1:
        found.notes.append(f"several candidates for {ex.filename}; graded {chosen}")
    raw = files[chosen]
    data = raw.read_bytes()[: MAX_FILE_BYTES + 1] if isinstance(raw, Path) else raw
    if len(data) > MAX_FILE_BYTES:
        found.problem = f"{chosen} is larger than {MAX_FILE_BYTES // 1024} KB"
        return found
    text = data.decode("utf-8", errors="replace")
    if chosen.endswith(".ipynb"):
        text, problem = notebook_to_source(text)
        if problem:
            found.problem = f"{chosen}: {problem}"
            return found
    found.source = text
    found.banned = find_banned(text, ex)
    return found


def notebook_to_source(text: str) -> tuple[str, str | None]:
    """The Python in a notebook: nbgrader solution cells if marked, else all code cells.

    IPython magics (``%...``, ``%%cell``) and shell lines (``!...``) are dropped.
    """
    try:
        nb = json.loads(text)
        cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    except (json.JSONDecodeError, AttributeError, TypeError):
        return "", "is not a readable Jupyter notebook"
    marked = [c for c in cells if (c.get("metadata", {}).get("nbgrader") or {}).get("solution")]
    chunks = []
    for cell in marked or cells:
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else str(src)
        if src.lstrip().startswith("%%"):
            continue
        lines = [_without_magic(ln) for ln in src.splitlines()]
        chunks.append("\n".join(lines))
    # Jupyter compiles each cell on its own, so `from __future__ import ...` is legal at the
    # top of any cell; in one file it must come first. Hoist those lines (one line added).
    futures = sorted({m.group(1).strip() for chunk in chunks for m in _FUTURE.finditer(chunk)})
    chunks = [_FUTURE.sub("pass  # __future__ import moved to the top", chunk) for chunk in chunks]
    head = f"from __future__ import {', '.join(futures)}\n" if futures else ""
    return head + "\n\n".join(chunks) + "\n", None


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
    hits: list[str] = []
    for node in ast.walk(tree):
        dotted = _dotted(node, aliases)
        if dotted and any(dotted == b or dotted.startswith(b + ".") for b in ex.banned):
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
