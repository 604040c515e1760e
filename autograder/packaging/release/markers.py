"""Solution markers in instructor ``.py`` files: find the regions, strip them, prove it.

A solution region is a run of lines between a line ``### BEGIN SOLUTION`` and a line
``### END SOLUTION`` (any indentation). :func:`strip_solutions` replaces each region by a
single ``raise NotImplementedError("<function>: not implemented yet")`` at the indentation
of its ``BEGIN`` line, naming the function that encloses it; every other line is kept
verbatim. Nested, unbalanced or malformed markers raise :class:`MarkerError` with the
file and line number, and so does a region outside any function (its ``raise`` would
run at import time and make the stub unimportable).

The same marker text is what nbgrader's ``ClearSolutions`` looks for in notebook cells,
so one convention covers the ``.py`` stubs and the companion notebooks.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

BEGIN = "BEGIN SOLUTION"
END = "END SOLUTION"
_MARKER_RE = re.compile(r"^(?P<indent>[ \t]*)###[ \t]*(?P<word>BEGIN|END) SOLUTION[ \t]*$")

STUB_MESSAGE = "{name}: not implemented yet"


class MarkerError(ValueError):
    """A solution marker problem, reported as ``file:line: message``."""

    def __init__(self, filename: str, lineno: int, message: str):
        self.filename, self.lineno, self.message = filename, lineno, message
        super().__init__(f"{filename}:{lineno}: {message}")


@dataclass(frozen=True)
class Region:
    begin: int          # 1-based line number of the BEGIN marker
    end: int            # 1-based line number of the END marker
    indent: str         # the BEGIN marker's indentation
    owner: str          # qualified name of the enclosing function ("Class.method")


@dataclass
class StrippedSource:
    """The result of :func:`strip_solutions`."""
    filename: str
    text: str                                         # the stub
    regions: list[Region] = field(default_factory=list)
    secret_lines: list[str] = field(default_factory=list)   # stripped lines from inside regions
    kept_lines: set[str] = field(default_factory=set)       # stripped lines outside regions


def find_regions(source: str, filename: str = "<source>") -> list[tuple[int, int, str]]:
    """``(begin, end, indent)`` for every region, 1-based; :class:`MarkerError` if malformed."""
    regions: list[tuple[int, int, str]] = []
    open_at: tuple[int, str] | None = None
    for lineno, line in enumerate(source.splitlines(), start=1):
        if BEGIN not in line and END not in line:
            continue
        match = _MARKER_RE.match(line)
        if match is None:
            raise MarkerError(filename, lineno,
                              f"malformed solution marker {line.strip()!r}: a marker must be "
                              f"a line of its own, exactly '### {BEGIN}' or '### {END}'")
        if match["word"] == "BEGIN":
            if open_at is not None:
                raise MarkerError(filename, lineno,
                                  f"nested '### {BEGIN}' (the region opened at line "
                                  f"{open_at[0]} is not closed yet)")
            open_at = (lineno, match["indent"])
        else:
            if open_at is None:
                raise MarkerError(filename, lineno,
                                  f"unbalanced '### {END}' without a '### {BEGIN}' before it")
            if match["indent"] != open_at[1]:
                raise MarkerError(filename, lineno,
                                  f"'### {END}' is indented differently from the "
                                  f"'### {BEGIN}' at line {open_at[0]}")
            regions.append((open_at[0], lineno, open_at[1]))
            open_at = None
    if open_at is not None:
        raise MarkerError(filename, open_at[0],
                          f"'### {BEGIN}' is never closed by a '### {END}'")
    return regions


def _function_spans(tree: ast.AST) -> list[tuple[int, int, str]]:
    """``(first_line, last_line, qualname)`` of every function, outermost first."""
    spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                spans.append((child.lineno, child.end_lineno or child.lineno, qualname))
                visit(child, qualname + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return spans


def enclosing_function(spans: list[tuple[int, int, str]], lineno: int) -> str | None:
    """The innermost function whose body contains line ``lineno``."""
    best: tuple[int, str] | None = None
    for first, last, name in spans:
        if first < lineno <= last and (best is None or first >= best[0]):
            best = (first, name)
    return best[1] if best else None


def significant(line: str) -> bool:
    """Whether a stripped line is distinctive enough to count as solution text."""
    line = line.strip()
    return bool(line) and not line.startswith("#") and len(line) >= 8


def strip_solutions(source: str, filename: str = "<source>") -> StrippedSource:
    """Replace every solution region of ``source`` by a friendly ``NotImplementedError``."""
    marks = find_regions(source, filename)
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise MarkerError(filename, exc.lineno or 0,
                          f"the solution file does not parse: {exc.msg}") from None
    spans = _function_spans(tree)

    lines = source.splitlines(keepends=True)
    result = StrippedSource(filename=filename, text="")
    out: list[str] = []
    cursor = 0                                   # 0-based index of the next line to copy
    for begin, end, indent in marks:
        owner = enclosing_function(spans, begin)
        if owner is None:
            raise MarkerError(filename, begin,
                              "solution region outside any function: its stub "
                              "(a raise) would run at import time")
        out.extend(lines[cursor:begin - 1])
        newline = "\r\n" if lines[begin - 1].endswith("\r\n") else "\n"
        message = STUB_MESSAGE.format(name=owner)
        out.append(f'{indent}raise NotImplementedError("{message}"){newline}')
        result.secret_lines.extend(line.strip() for line in lines[begin:end - 1])
        result.regions.append(Region(begin, end, indent, owner))
        cursor = end
    out.extend(lines[cursor:])
    result.text = "".join(out)

    inside = {i for b, e, _ in marks for i in range(b, e + 1)}
    result.kept_lines = {line.strip() for i, line in enumerate(lines, start=1) if i not in inside}
    return result


def leaked_lines(text: str, secret_lines: list[str], allowed: set[str]) -> list[str]:
    """Solution lines (significant, not also legitimately present in ``allowed``) in ``text``."""
    present = {line.strip() for line in text.splitlines()}
    return sorted({line for line in secret_lines
                   if significant(line) and line not in allowed and line in present})


def check_stub(stub: str, filename: str, secret_lines: list[str], allowed: set[str]) -> None:
    """The stub compiles, holds no marker and no solution line; :class:`MarkerError` if not."""
    try:
        compile(stub, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise MarkerError(filename, exc.lineno or 0,
                          f"the generated stub does not compile: {exc.msg}") from None
    for lineno, line in enumerate(stub.splitlines(), start=1):
        if BEGIN in line or END in line:
            raise MarkerError(filename, lineno, "a solution marker survived in the stub")
    leaks = leaked_lines(stub, secret_lines, allowed)
    if leaks:
        raise MarkerError(filename, 0, "solution text survived in the stub: "
                          + "; ".join(repr(line) for line in leaks[:5]))
