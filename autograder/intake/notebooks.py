"""A Jupyter notebook's Python, as one module: what a notebook submission is graded as.

Each code cell is read the way Jupyter runs it: IPython's own input transformations
(``IPython.core.inputtransformer2.TransformerManager``, the code Jupyter's kernel runs on every
cell) turn ``%magics``, ``%%cell magics``, ``!shell`` lines, ``x = !cmd`` and ``obj?`` into
calls of ``get_ipython()``; a line that merely starts with ``%`` inside brackets (Black's way
of breaking a long ``"…" % args``) is left alone, as Jupyter leaves it. When graded, a
stand-in ``get_ipython`` (defined at the top of the module) makes magics and shell lines do
nothing, but gives back what a later cell may use as IPython gives it: ``%time stmt`` runs
its statement (``x = %time f()`` is f's value), ``%pwd`` is the working folder, ``x = !cmd``
an empty list of lines (no command runs). Two cell magics run their body as Python in the
notebook's namespace, and so do they here: ``%%time`` and ``%%capture [name]``
(:data:`RUNS_ITS_BODY`; a function defined under either is defined; ``name`` holds what the
body printed, in ``.stdout`` and ``.stderr``). An error in such a body is ignored: IPython
swallows a ``%%capture`` body's, and a ``%%time`` cell, inert until 2026-11, never cost a
student anything. ``display()``, which IPython puts among the builtins of every notebook,
shows nothing. A cell whose transformed text does not compile is kept exactly as written (its
error is then the student's own).

Which cells: every code cell, but those nbgrader manages as autograded tests (its ``grade``
flag without ``solution``: the release's test cells). The worker runs them one by one, in
order, as nbgrader runs a notebook (``read_notebook`` gives where each starts;
``protocol.Load.cells``): an error ends its cell and the next cell runs, so a notebook that
ends in a demo of a required ``ValueError``, or holds a half-finished cell, keeps what its
other cells define; the exercise's message names the first error. A syntax error anywhere,
or a hang, still costs the exercise, as in a ``.py``.

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
from dataclasses import dataclass

from autograder import textsafe

# IPython's work on one cell grows with (lines it rewrites + 1) x the cell's size; this many
# units (bytes x rewrites) per notebook, about two seconds on a slow machine.
TRANSFORM_BUDGET = 4 * 1024 * 1024
# get_ipython() when graded: magics and shell commands do nothing, but what a later cell may
# use is given back as IPython gives it: `x = %time f()` runs f() (IPython's %time runs its
# statement), `here = %pwd` is the working folder, `out = !cmd` an empty list of lines.
STAND_IN = '''\
class _GradedNotebookMagics:  # %magics and !commands when graded (autograder/intake/notebooks.py)
    def __getattr__(self, name): return lambda *args, **kwargs: None
    def run_line_magic(self, magic, line, *args, **kwargs):
        if magic == "time":
            try: code = compile(line, "<notebook %time>", "eval")
            except SyntaxError: return exec(compile(line, "<notebook %time>", "exec"), globals())
            return eval(code, globals())
        if magic == "pwd": return __import__("os").getcwd()
        return None
    def getoutput(self, *args, **kwargs): return _ShellOutput()
class _ShellOutput(list):  # the lines of `x = !cmd`: no command runs when graded
    s = n = nlstr = spstr = ""
    l = property(lambda self: self)
    def grep(self, *args, **kwargs): return _ShellOutput()
    def fields(self, *args): return _ShellOutput()
def get_ipython(): return _GradedNotebookMagics()
'''
# %%capture [name]: the body's printed output captured, `name` holding it as IPython's does
CAPTURE_STAND_IN = '''\
class _NotebookCapture:  # %%capture when graded (autograder/intake/notebooks.py)
    stdout = stderr = ""
    outputs = []
    def __enter__(self):
        import io, sys
        self._saved, self._out, self._err = (sys.stdout, sys.stderr), io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = self._out, self._err
        return self
    def __exit__(self, *exc):
        import sys
        sys.stdout, sys.stderr = self._saved
        self.stdout, self.stderr = self._out.getvalue(), self._err.getvalue()
        return False
    def show(self): print(self.stdout, end="")
    def __call__(self): self.show()
'''
DISPLAY_STAND_IN = "def display(*objects, **options): return None  # Jupyter's display(): nothing when graded\n"
RUNS_ITS_BODY = ("time", "capture")     # cell magics that run their body in the notebook's namespace


@dataclass(frozen=True)
class NotebookSource:
    """A notebook's Python as one module's text, and where each of its cells starts."""
    source: str
    cells: tuple[int, ...]     # the first line (1-based) of each part run on its own: the stand-ins, then each code cell


@dataclass(frozen=True)
class CellLine:
    """A line of a notebook's joined Python (:class:`NotebookSource`) as the student sees it."""
    line: int          # 1-based, within its cell
    begins: str        # the cell's first non-blank line, to find the cell by


def cell_line(source: str, starts: tuple[int, ...], line: int | None) -> CellLine | None:
    """Where ``line`` of a notebook's joined ``source`` (cells starting on ``starts``) lies in
    the student's cells; None when it is not inside one (the kit's stand-ins, or no line)."""
    if not starts or line is None:
        return None
    lines = source.splitlines()
    for start, end in zip(starts, (*starts[1:], len(lines) + 1)):
        if start <= line < end:
            first = next((text.strip() for text in lines[start - 1:end - 1] if text.strip()), "")
            if first.startswith(("class _GradedNotebookMagics", "class _NotebookCapture", "def display(")) \
                    or first.startswith("from __future__ import") and start == 1:
                return None                        # the kit's own head
            return CellLine(line - start + 1, first[:60] + ("…" if len(first) > 60 else ""))
    return None


def notebook_to_source(text: str, max_code_bytes: int | None = None) -> tuple[str, str | None]:
    """The Python in a notebook as one text (see :func:`read_notebook`): ``(source, problem)``."""
    read, problem = read_notebook(text, max_code_bytes)
    return ("", problem) if read is None else (read.source, None)


def read_notebook(text: str, max_code_bytes: int | None = None) -> tuple[NotebookSource | None, str | None]:
    """The Python in a notebook: its code cells but nbgrader's autograded test cells, and the
    line each starts on (the worker runs them one by one: ``protocol.Load.cells``).

    ``max_code_bytes`` bounds the code cells' sources (outputs never count). A malformed
    notebook, or too much code, gives ``(None, problem)``, never an exception.
    """
    try:
        nb = json.loads(text)
        cells = _code_cells(nb)
    except (ValueError, RecursionError, TypeError, AttributeError):
        return None, "is not a readable Jupyter notebook"
    except _Malformed as exc:
        return None, f"is not a readable Jupyter notebook ({exc})"
    sources = [src for cell, src in cells if not _is_nbgrader_test(cell)]
    if max_code_bytes is not None and sum(len(s.encode("utf-8", "surrogatepass")) for s in sources) > max_code_bytes:
        return None, f"has more than {max_code_bytes // (1024 * 1024)} MB of code"
    # a JSON "\ud800" is a lone surrogate, which compile() refuses: in a string literal its
    # escape means the same, elsewhere it is a syntax error either way
    sources = [_SURROGATES.sub(lambda m: textsafe.escape_char(m.group()), src) for src in sources]
    reader = CellReader()
    chunks = [reader.python(src) for src in sources]
    # Jupyter compiles each cell on its own, so `from __future__ import ...` is legal at the
    # top of any cell; in one file it must come first. Hoist those lines (one line added).
    futures = sorted({m.group(1).strip() for chunk in chunks for m in _FUTURE.finditer(chunk)})
    chunks = [_FUTURE.sub("pass  # __future__ import moved to the top", chunk) for chunk in chunks]
    head = f"from __future__ import {', '.join(futures)}\n" if futures else ""
    if any("get_ipython" in chunk for chunk in chunks):
        head += STAND_IN
    if any("_NotebookCapture()" in chunk for chunk in chunks):
        head += CAPTURE_STAND_IN
    if any(_DISPLAY.search(chunk) for chunk in chunks):
        head += DISPLAY_STAND_IN
    starts, line = ([1] if head else []), 1 + head.count("\n")
    for chunk in chunks:                             # joined by "\n\n": a blank line between cells
        starts.append(line)
        line += chunk.count("\n") + 2
    return NotebookSource(head + "\n\n".join(chunks) + "\n", tuple(starts)), None


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
            captured = (name or "_notebook_capture") if magic == "capture" else None
            header = (f"{captured} = _NotebookCapture()" if captured else "pass") + \
                f"  # %%{magic}: its body runs, as in Jupyter"
            skipped = src[:runs_its_body.end()].count("\n")
            headers.append(("\n" * max(0, skipped - 1) + header + "\n", magic, captured))
            src = src[runs_its_body.end():]
        if headers:
            body = self.python(src)
            for header, magic, captured in reversed(headers):
                body = header + _errors_ignored(body, f"%%{magic}: an error in its body is ignored", captured)
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


def _errors_ignored(code: str, why: str, captured: str | None = None) -> str:
    """``code`` run in the module's namespace with any error in it ignored (``why``: who ignores
    it), on at least as many lines as it had; ``captured``: inside ``with captured:`` (a
    ``_NotebookCapture`` collecting what it prints). Compiled where it runs: a body that does
    not compile is ignored too, as Jupyter goes on after such a cell."""
    run = f"exec(compile({code!r}, '<notebook cell>', 'exec'), globals())"
    inner = f"    with {captured}:\n        {run}\n" if captured else f"    {run}\n"
    wrapped = f"try:  # {why}\n{inner}except (Exception, SystemExit):\n    pass\n"
    return wrapped + "\n" * max(0, code.count("\n") - wrapped.count("\n"))


def _transformer_manager():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except Exception:  # noqa: BLE001 - not installed, or broken: the fallback reads cells
        return None
    return TransformerManager()


def _compiles(code: str) -> bool:
    """``code`` (one cell) compiles as it will run: its ``from __future__`` lines moved to the
    top of the module (:func:`read_notebook`), so one after a magic's line is no error (Jupyter
    compiles each statement of a cell on its own)."""
    try:
        compile(_FUTURE.sub("pass", code), "<cell>", "exec", dont_inherit=True)
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
_FUTURE = re.compile(r"^from __future__ import \(?([\w, ]+?)\)?[ \t]*(?:#.*)?$", re.MULTILINE)
# The fallback's rule (no IPython): a magic, shell or help line; an assignment from one.
_MAGIC_LINE = re.compile(r"[ \t]*(?:[%!]|[\w.]+[ \t]*\?{1,2}[ \t]*$)")
_MAGIC_ASSIGN = re.compile(r"[ \t]*([\w.]+)[ \t]*=[ \t]*[%!]")
# Lines IPython may rewrite (for the cost estimate only, never for what a line means).
_CANDIDATE = re.compile(r"^[ \t]*[%!?]|\?[ \t]*$|=[ \t]*[%!]", re.MULTILINE)
