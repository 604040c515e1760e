"""A Jupyter notebook's Python, as one module: what a notebook submission is graded as."""
from __future__ import annotations

import json
import re

from autograder import textsafe

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
