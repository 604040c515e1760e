"""Mutants as patches: a realistic bug is a few changed lines of the model answer.

Stored as a diff, a mutant shows exactly its bug, follows the solution when the solution
changes elsewhere, and does not repeat the whole file.

A mutant file ``tests/submissions/<ex>/mutants/<case>.diff`` is

    # expect-fail: <words>[|<words> …]      the test(s) the bug must fail (substrings of titles)
    # breaks: <name>[, <name>:<property>]    optional: what it breaks besides the functions its
                                             patch changes and their callers (tests/suite_covers.py)
    # cause: <words>[ | <words>]             optional: every "Likely cause" it gets names this
    # mutant: <what the bug is>              optional further comment lines
    @@ -40,3 +40,3 @@                        a unified diff against the solution as a
     context                                 student submits it (markers removed)
    -old line
    +new line

Hunks are located by their content (the old lines; the nearest occurrence to the hunk's line
number when there are several), so edits elsewhere in the solution do not break a mutant;
a hunk whose old lines no longer occur fails loudly, and the mutant must be refreshed.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from autograder import contract

ROOT = Path(__file__).resolve().parents[1]

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


class PatchError(ValueError):
    pass


def as_submitted(solution: str) -> str:
    """The model answer as a student would hand it in: the solution markers removed."""
    return "".join(ln for ln in solution.splitlines(True) if ln.strip() not in MARKERS)


def header(patch: str) -> list[str]:
    """The comment lines before the first hunk (``# expect-fail: …`` first)."""
    out = []
    for line in patch.splitlines():
        if _HUNK.match(line):
            break
        out.append(line)
    return out


def make_patch(base: str, mutant: str, comments: list[str], context: int = 2) -> str:
    """A new mutant from a buggy copy of ``as_submitted(solution)`` (``comments`` first)."""
    diff = difflib.unified_diff(base.splitlines(True), mutant.splitlines(True), n=context)
    hunks = [ln for ln in diff if not ln.startswith(("---", "+++"))]
    return "\n".join(comments) + "\n" + "".join(hunks)


def apply_patch(base: str, patch: str) -> str:
    lines = base.splitlines(True)
    hunks: list[tuple[int, list[str], list[str]]] = []
    for line in patch.splitlines(True)[len(header(patch)):]:
        if match := _HUNK.match(line):
            hunks.append((int(match.group(1)) - 1, [], []))
        elif line.startswith("\\"):                       # "\ No newline at end of file"
            continue
        elif hunks:
            tag, text = line[:1], line[1:]
            if tag in " -":
                hunks[-1][1].append(text)
            if tag in " +":
                hunks[-1][2].append(text)
    if not hunks:
        raise PatchError("no hunks")
    shift = 0                                             # lines added so far by earlier hunks
    for line_number, old, new in hunks:
        starts = [i for i in range(len(lines) - len(old) + 1) if lines[i:i + len(old)] == old]
        if not starts:
            raise PatchError(f"a hunk no longer matches the solution near line {line_number + 1} "
                             f"({old[0].strip()[:60]!r} …): refresh the mutant")
        start = min(starts, key=lambda i: abs(i - (line_number + shift)))
        lines[start:start + len(old)] = new
        shift += len(new) - len(old)
    return "".join(lines)


def mutant_source(path: Path) -> str:
    """The student file a mutant stands for: its exercise's solution with the patch applied."""
    ex = contract.BY_ID[path.parent.parent.name]
    solution = (ROOT / "solutions" / ex.folder / ex.filename).read_text()
    return apply_patch(as_submitted(solution), path.read_text())


def label(path: Path) -> tuple[str, ...] | None:
    """The ``# cause-id:`` ids of a mutant (the causes any of which is a right hint), ``()`` for
    ``none (why)``, None when the header has no such line."""
    for line in header(path.read_text()):
        if line.startswith("# cause-id:"):
            value = line.removeprefix("# cause-id:").strip()
            return () if value.startswith("none") else tuple(w.strip() for w in value.split("|") if w.strip())
    return None


def expected_failures(path: Path) -> list[str]:
    """The ``# expect-fail:`` words of a mutant (each a substring of a test that must fail)."""
    first = (header(path.read_text()) or [""])[0]
    if not first.startswith("# expect-fail:"):
        raise PatchError(f"{path.name}: the first line must be '# expect-fail: <words>'")
    return [w.strip() for w in first.removeprefix("# expect-fail:").split("|") if w.strip()]
