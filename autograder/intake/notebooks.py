"""A Jupyter notebook's Python, as one module: what a notebook submission is graded as.

Each code cell is read the way Jupyter runs it: IPython's own input transformations
(``IPython.core.inputtransformer2.TransformerManager``, the code Jupyter's kernel runs on every
cell) turn ``%magics``, ``%%cell magics``, ``!shell`` lines, ``x = !cmd`` and ``obj?`` into
calls of ``get_ipython()``; a line that merely starts with ``%`` inside brackets (Black's way
of breaking a long ``"…" % args``) is left alone, as Jupyter leaves it. When graded, those
calls do nothing: a stand-in ``get_ipython`` is defined at the top of the module, so a magic,
a shell line and a ``%%`` cell are inert. Two cell magics run their body as Python in the
notebook's namespace, and so do they here: ``%%time`` and ``%%capture`` (:data:`RUNS_ITS_BODY`;
a function defined under either is defined). An error in such a body is ignored: IPython
swallows a ``%%capture`` body's, and a ``%%time`` cell, inert until 2026-11, never cost a
student anything. ``display()``, which IPython puts among the builtins of every notebook,
shows nothing. A cell whose transformed text does not compile is kept exactly as written (its
error is then the student's own).

Which cells: every code cell, but those nbgrader manages as autograded tests (its ``grade``
flag without ``solution``: the release's test cells). In a notebook nbgrader manages, a cell the
student added (no nbgrader metadata) runs as nbgrader runs it: an error in it is ignored
(``allow_errors``) and the cells after it still run; every other cell runs as module code, as
Jupyter's "Run All" runs it: an error stops the cells after it, what the cells before it
defined is graded (a notebook ending in a demo of a required ``ValueError`` keeps its marks),
and the exercise's message says where the cells stopped (``protocol.Load.notebook``; a
syntax error or a hang still costs the exercise, as in a ``.py``).

Where IPython is not installed (a student's own ``check`` without Jupyter), a cell is kept as
written when it compiles, else lines starting with ``%`` or ``!`` become ``pass`` when that
compiles, else it is kept as written. IPython re-reads the whole cell for every magic it
rewrites; a cell that would cost more than what is left of :data:`TRANSFORM_BUDGET` gets that
fallback too (only a notebook made to stall the grader reaches it).

Saved outputs (plots, printed tables) are never read: only the sources of the code cells are.
"""
from __future__ import annotations

import json
import keyword
import re

from autograder import textsafe

# IPython's work on one cell grows with (lines it rewrites + 1) x the cell's size; this many
# units (bytes x rewrites) per notebook, about two seconds on a slow machine.
TRANSFORM_BUDGET = 4 * 1024 * 1024
STAND_IN = ("class _GradedNotebookMagics:  # %magics, %%magics and !commands do nothing when graded\n"
            "    def __getattr__(self, name): return lambda *args, **kwargs: None\n"
            "def get_ipython(): return _GradedNotebookMagics()\n")
DISPLAY_STAND_IN = "def display(*objects, **options): return None  # Jupyter's display(): nothing when graded\n"
RUNS_ITS_BODY = ("time", "capture")     # cell magics that run their body in the notebook's namespace


def notebook_to_source(text: str, max_code_bytes: int | None = None) -> tuple[str, str | None]:
    """The Python in a notebook: its code cells but nbgrader's autograded test cells.

    ``max_code_bytes`` bounds the code cells' sources (outputs never count). A malformed
    notebook, or too much code, gives ``("", problem)``, never an exception.
    """
    try:
        nb = json.loads(text)
        cells = _code_cells(nb)
    except (ValueError, RecursionError, TypeError, AttributeError):
        return "", "is not a readable Jupyter notebook"
    except _Malformed as exc:
        return "", f"is not a readable Jupyter notebook ({exc})"
    managed = any(_nbgrader(cell) is not None for cell, _ in cells)
    kept = [(cell, src) for cell, src in cells if not _is_nbgrader_test(cell)]
    tolerant = [managed and _nbgrader(cell) is None for cell, _ in kept]     # nbgrader ignores its errors
    sources = [src for _, src in kept]
    if max_code_bytes is not None and sum(len(s.encode("utf-8", "surrogatepass")) for s in sources) > max_code_bytes:
        return "", f"has more than {max_code_bytes // (1024 * 1024)} MB of code"
    # a JSON "\ud800" is a lone surrogate, which compile() refuses: in a string literal its
    # escape means the same, elsewhere it is a syntax error either way
    sources = [_SURROGATES.sub(lambda m: textsafe.escape_char(m.group()), src) for src in sources]
    reader = CellReader()
    chunks = [reader.python(src) for src in sources]
    # Jupyter compiles each cell on its own, so `from __future__ import ...` is legal at the
    # top of any cell; in one file it must come first. Hoist those lines (one line added).
    futures = sorted({m.group(1).strip() for chunk in chunks for m in _FUTURE.finditer(chunk)})
    chunks = [_FUTURE.sub("pass  # __future__ import moved to the top", chunk) for chunk in chunks]
    chunks = [_errors_ignored(chunk, "a cell you added: nbgrader runs it and ignores its errors") if added
              else chunk for chunk, added in zip(chunks, tolerant)]
    head = f"from __future__ import {', '.join(futures)}\n" if futures else ""
    if any("get_ipython" in chunk for chunk in chunks):
        head += STAND_IN
    if any(_DISPLAY.search(chunk) for chunk in chunks):
        head += DISPLAY_STAND_IN
    return head + "\n\n".join(chunks) + "\n", None


class CellReader:
    """One notebook's cells, each turned into the Python Jupyter would run (see the module)."""

    def __init__(self, budget: int = TRANSFORM_BUDGET):
        self.budget = budget
        self._manager = _transformer_manager()

    def python(self, src: str) -> str:
        """The cell ``src`` as Python; line numbers are kept except where IPython folds a
        cell magic or a continued magic line into one call."""
        headers = []
        while runs_its_body := _RUNS_ITS_BODY.match(src):     # %%time / %%capture [name]: the body runs
            magic, args = runs_its_body.group(1), runs_its_body.group(2).split()
            name = next((a for a in args if a.isidentifier() and not keyword.iskeyword(a)), None)
            header = (f"{name} = get_ipython()" if magic == "capture" and name else "pass") + \
                f"  # %%{magic}: its body runs, as in Jupyter"
            skipped = src[:runs_its_body.end()].count("\n")
            headers.append(("\n" * max(0, skipped - 1) + header + "\n", magic))
            src = src[runs_its_body.end():]
        if headers:
            body = self.python(src)
            for header, magic in reversed(headers):
                body = header + _errors_ignored(body, f"%%{magic}: an error in its body is ignored")
            return body
        transformed = self._transform(src)
        if transformed is not None:
            return transformed if _compiles(transformed) else src
        return src if _compiles(src) else _by_line_rule(src)

    def _transform(self, src: str) -> str | None:
        """IPython's transformation of one cell; None where IPython is missing, over the
        budget, or failing (it raises on input it cannot make sense of)."""
        if self._manager is None:
            return None
        cost = (len(_CANDIDATE.findall(src)) + 1) * max(1, len(src))
        if cost > self.budget:
            return None
        self.budget -= cost
        try:
            return self._manager.transform_cell(src)
        except Exception:  # noqa: BLE001 - IPython's own errors: the cell is read without it
            return None


def _errors_ignored(code: str, why: str) -> str:
    """``code`` run in the module's namespace with any error in it ignored (``why``: who ignores
    it), on at least as many lines as it had. Compiled where it runs: a body that does not
    compile is ignored too, as Jupyter goes on after such a cell."""
    wrapped = (f"try:  # {why}\n"
               f"    exec(compile({code!r}, '<notebook cell>', 'exec'), globals())\n"
               "except (Exception, SystemExit):\n"
               "    pass\n")
    return wrapped + "\n" * max(0, code.count("\n") - 4)


def _transformer_manager():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except Exception:  # noqa: BLE001 - not installed, or broken: the fallback reads cells
        return None
    return TransformerManager()


def _compiles(code: str) -> bool:
    try:
        compile(code, "<cell>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _by_line_rule(src: str) -> str:
    """Without IPython: a ``%%`` cell becomes ``pass``; lines starting with ``%`` or ``!`` and
    ``name?`` lines become ``pass``, ``x = !cmd`` / ``x = %magic`` become ``x = None``; used
    only when that compiles, else the cell as written."""
    if src.lstrip().startswith("%%"):
        return "pass  # notebook cell magic removed"
    guessed = "\n".join(_without_magic(line) for line in src.splitlines())
    return guessed if _compiles(guessed) else src


def _without_magic(line: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    if _MAGIC_LINE.match(line):
        return indent + "pass  # notebook magic removed"
    assigned = _MAGIC_ASSIGN.match(line)
    if assigned:
        return f"{indent}{assigned.group(1)} = None  # notebook magic removed"
    return line


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


def _nbgrader(cell: dict) -> dict | None:
    """The cell's nbgrader metadata; None when nbgrader does not manage it (metadata of any
    other shape counts as none)."""
    metadata = cell.get("metadata")
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else None


def _is_nbgrader_test(cell: dict) -> bool:
    """An autograded test cell of nbgrader (``grade`` without ``solution``)."""
    nbgrader = _nbgrader(cell)
    return nbgrader is not None and bool(nbgrader.get("grade")) and not nbgrader.get("solution")


_SURROGATES = re.compile(r"[\ud800-\udfff]")
# blank lines, then %%time or %%capture and its arguments (IPython reads a cell magic there only)
_RUNS_ITS_BODY = re.compile(r"\A(?:[ \t]*\n)*%%(" + "|".join(RUNS_ITS_BODY) + r")(?![\w])([^\n]*)(?:\n|\Z)")
_DISPLAY = re.compile(r"\bdisplay\b")
_FUTURE = re.compile(r"^from __future__ import ([\w, ]+?)[ \t]*(?:#.*)?$", re.MULTILINE)
# The fallback's rule (no IPython): a magic, shell or help line; an assignment from one.
_MAGIC_LINE = re.compile(r"[ \t]*(?:[%!]|[\w.]+[ \t]*\?{1,2}[ \t]*$)")
_MAGIC_ASSIGN = re.compile(r"[ \t]*([\w.]+)[ \t]*=[ \t]*[%!]")
# Lines IPython may rewrite (for the cost estimate only, never for what a line means).
_CANDIDATE = re.compile(r"^[ \t]*[%!?]|\?[ \t]*$|=[ \t]*[%!]", re.MULTILINE)
