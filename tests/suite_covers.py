"""What each graded test is about: the names its verdict may depend on.

Every hidden test says which functions (or ``function:property``) it judges with
``@pytest.mark.covers("create_causal_mask", …)``; only the public tests (shipped to students
as they are, without the marker) cover the contract names their titles spell out.
A mutant's breaks (``mutant_breaks``) are the top-level functions and classes its patch
changes, every one of the solution's functions that uses them (transitively), and the
``# breaks: …`` header line's extra names (properties such as ``softmax:inputs``).

``test_suites_corpus`` checks that every test a mutant fails covers something the mutant
breaks: a test about input mutation must not fail for a wrong value, a test of
``combine_masks`` must not fail for a wrong ``create_causal_mask``.
"""
from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from autograder import contract
from autograder.records import TestRecord

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def records() -> tuple[TestRecord, ...]:
    """The engine's record of every test of every suite (:func:`autograder.grading.collect`, the
    one collection pass grading, ``check`` and the coverage matrix read), made once per session
    in a fresh interpreter: ``python -m autograder.coverage --json``."""
    proc = subprocess.run([sys.executable, "-m", "autograder.coverage", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise RuntimeError(f"collecting the suites failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return tuple(TestRecord.from_json(r) for r in json.loads(proc.stdout))


def names_in_title(exercise_id: str, title: str) -> set[str]:
    """The contract names a title spells out (whole words)."""
    names = contract.BY_ID[exercise_id].names
    return {n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", title)}


def covers_of(record: TestRecord) -> set[str]:
    """A hidden test's ``covers`` markers; only a public test (shipped to students as it is,
    without kit markers) is read from its title. ``tests/test_coverage_matrix.py`` requires
    the marker on every hidden test, so editing a docstring never changes what is verified."""
    return set(record.covers) if record.covers or not record.public else names_in_title(record.exercise, record.title)


def hidden_without_covers() -> list[str]:
    """Node ids of hidden tests that carry no ``covers`` marker (there must be none)."""
    return [r.nodeid for r in records() if not r.covers and not r.public]


@lru_cache(maxsize=1)
def covers_by_result_name() -> dict[str, set[str]]:
    """``"ex4 · <title>"`` (a result's name) -> what that test covers."""
    return {r.name: covers_of(r) for r in records()}


# --------------------------------------------------------------------------- mutants

def _top_level(source: str) -> dict[str, str]:
    """Top-level function/class name -> its source text (its lines, decorators excluded as
    ``ast.get_source_segment`` does; the lines split once: ``get_source_segment`` splits
    the whole file again for every node)."""
    tree = ast.parse(source)
    lines = io.StringIO(source, newline="").readlines()       # \n, \r\n and \r, as ast splits

    def segment(node: ast.stmt) -> str:
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
        head = lines[first].encode()[node.col_offset:].decode()
        tail = lines[last].encode()[:node.end_col_offset].decode()
        return head + "".join(lines[first + 1:last]) + tail

    return {node.name: segment(node) for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def _uses(source: str) -> dict[str, set[str]]:
    """Top-level name -> the other top-level names its body mentions."""
    tree = ast.parse(source)
    tops = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return {node.name: {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and x.id in tops} - {node.name}
            for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def changed_names(solution: str, mutant: str) -> set[str]:
    before, after = _top_level(solution), _top_level(mutant)
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}


def declared_breaks(patch: str) -> set[str]:
    """The names of ``# breaks: a, b:property`` header lines."""
    out: set[str] = set()
    for line in patch.splitlines():
        if line.startswith("@@"):
            break
        if line.startswith("# breaks:"):
            out |= {w.strip() for w in line.removeprefix("# breaks:").split(",") if w.strip()}
    return out


def mutant_breaks(solution: str, mutant: str, patch: str) -> set[str]:
    """What a mutant breaks: the changed top-level names, their users (transitively), and
    the declared extras."""
    broken = changed_names(solution, mutant)
    uses = _uses(solution)
    grew = True
    while grew:
        more = {name for name, used in uses.items() if used & broken} - broken
        broken |= more
        grew = bool(more)
    return broken | declared_breaks(patch)


def _within(cover: str, broken: str) -> bool:
    """``cover`` is about ``broken`` or a part of it: a method of a broken class
    (``MultiHeadAttention.forward``), a property of a broken function (``softmax:inputs``), or
    a finer cell of a broken property (``softmax:inputs/shared`` of ``softmax:inputs``)."""
    return cover == broken or cover.startswith((broken + ".", broken + ":", broken + "/"))


def justified(covers: set[str], breaks: set[str]) -> bool:
    """A failing test is justified when it covers something the mutant breaks (or a part of
    it, see ``_within``), e.g. ``softmax:inputs/shared`` for a mutant that breaks
    ``softmax:inputs``, ``MultiHeadAttention.forward:device`` for one that changes the class."""
    return any(_within(c, b) for c in covers for b in breaks)
