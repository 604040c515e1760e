"""Mutants as patches: a realistic bug is a few changed lines of the model answer.

Stored as a diff, a mutant shows exactly its bug, follows the solution when the solution
changes elsewhere, and does not repeat the whole file. A mutant file ``<case>.diff`` (the
kit's in ``tests/submissions/<ex>/mutants/``, an instructor's in ``<FOLDER>/<ex>/mutants/``
for ``audit --extra FOLDER``) is

    # expect-fail: <words>[|<words> …]      the test(s) the bug must fail (substrings of titles)
    # breaks: <name>[, <name>:<property>]    optional: what it breaks besides the functions its
                                             patch changes and their callers (tests/suite_covers.py)
    # cause-id: <ids> | none (why)           the causes a right "Likely cause" may name
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

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
EXPECT_FAIL = "# expect-fail:"
CAUSE_ID = "# cause-id:"
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


class PatchError(ValueError):
    """A mutant that cannot be applied (or whose header is malformed)."""


def as_submitted(solution: str) -> str:
    """The model answer as a student would hand it in: the solution markers removed."""
    return "".join(ln for ln in solution.splitlines(True) if ln.strip() not in MARKERS)


def solution_source(root: Path, exercise: contract.Exercise) -> str:
    """``solutions/<folder>/<file>`` of the checkout ``root``, as submitted."""
    return as_submitted((root / "solutions" / exercise.folder / exercise.filename).read_text(encoding="utf-8"))


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


def _hunks(patch: str) -> list[tuple[int, list[str], list[str]]]:
    """``(0-based line, old lines, new lines)`` of each hunk."""
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
    return hunks


def apply_patch(base: str, patch: str) -> str:
    """``base`` with every hunk of ``patch`` applied where its old lines occur."""
    lines = base.splitlines(True)
    hunks = _hunks(patch)
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


def exercise_of(path: Path) -> contract.Exercise:
    """The exercise of ``<…>/<ex id>/mutants/<case>.diff`` (its grandparent folder's name)."""
    ex_id = path.parent.parent.name
    if ex_id not in contract.BY_ID:
        raise PatchError(f"{path}: {ex_id!r} is not an exercise id (known: {', '.join(contract.BY_ID)})")
    return contract.BY_ID[ex_id]


def mutant_source(path: Path, root: Path) -> str:
    """The student file a mutant stands for: its exercise's solution (in the checkout ``root``)
    with the patch applied."""
    return apply_patch(solution_source(root, exercise_of(path)), path.read_text(encoding="utf-8"))


def cause_label(patch: str) -> tuple[str, ...] | None:
    """The ``# cause-id:`` ids of a mutant's text (the causes any of which is a right hint),
    ``()`` for ``none (why)``, None when the header has no such line."""
    for line in header(patch):
        if line.startswith(CAUSE_ID):
            value = line.removeprefix(CAUSE_ID).strip()
            return () if value.startswith("none") else tuple(w.strip() for w in value.split("|") if w.strip())
    return None


def expected_words(patch: str, required: bool = True) -> list[str]:
    """The ``# expect-fail:`` words of a mutant's text (each a substring of a test that must
    fail). Without that first line: :class:`PatchError` when ``required``, else ``[]`` (any
    lost point catches it)."""
    first = (header(patch) or [""])[0]
    if not first.startswith(EXPECT_FAIL):
        if required:
            raise PatchError("the first line must be '# expect-fail: <words>'")
        return []
    return [w.strip() for w in first.removeprefix(EXPECT_FAIL).split("|") if w.strip()]
