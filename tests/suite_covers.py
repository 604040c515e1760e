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
import json
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from autograder import contract

ROOT = Path(__file__).resolve().parents[1]

_COLLECT = r"""
import json, sys
import pytest
from autograder import contract
from autograder.grading import pytest_args
from autograder.plugin import exercise_of, title_of

class Recorder:
    def __init__(self):
        self.found = []
    def pytest_collection_modifyitems(self, items):
        for item in items:
            marker = item.get_closest_marker("covers")
            self.found.append([exercise_of(item), title_of(item), item.nodeid,
                               list(marker.args) if marker else None])

rec = Recorder()
code = pytest.main(pytest_args(contract.EXERCISES, "--collect-only"), plugins=[rec])
print("@@" + json.dumps(rec.found))
sys.exit(0 if code == 0 else 1)
"""


@lru_cache(maxsize=1)
def collected() -> tuple[tuple[str, str, str, tuple[str, ...] | None], ...]:
    """(exercise id, title, node id, covers marker args or None) for every suite test."""
    proc = subprocess.run([sys.executable, "-c", _COLLECT], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("@@")), None)
    if proc.returncode or line is None:
        raise RuntimeError(f"collecting the suites failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return tuple((ex, title, node, None if cov is None else tuple(cov))
                 for ex, title, node, cov in json.loads(line[2:]))


def names_in_title(exercise_id: str, title: str) -> set[str]:
    """The contract names a title spells out (whole words)."""
    names = contract.BY_ID[exercise_id].names
    return {n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", title)}


def is_public(node: str) -> bool:
    return "/public/" in node


def covers_of(exercise_id: str, title: str, marker: tuple[str, ...] | None) -> set[str]:
    """A hidden test's ``covers`` marker; only a public test (shipped to students as it is,
    without kit markers) is read from its title. ``tests/test_coverage_matrix.py`` requires
    the marker on every hidden test, so editing a docstring never changes what is verified."""
    return set(marker) if marker is not None else names_in_title(exercise_id, title)


def hidden_without_covers() -> list[str]:
    """Node ids of hidden tests that carry no ``covers`` marker (there must be none)."""
    return [node for _ex, _title, node, marker in collected() if marker is None and not is_public(node)]


@lru_cache(maxsize=1)
def covers_by_result_name() -> dict[str, set[str]]:
    """``"ex4 · <title>"`` (a result's name) -> what that test covers."""
    return {f"{ex} · {title}": covers_of(ex, title, marker) for ex, title, _, marker in collected()}


# --------------------------------------------------------------------------- mutants

def _top_level(source: str) -> dict[str, str]:
    """Top-level function/class name -> its source text."""
    tree = ast.parse(source)
    return {node.name: ast.get_source_segment(source, node) or ""
            for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


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
