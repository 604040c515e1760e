"""How the house tests read the kit's sources: where a module hard-codes an exercise, and
where a hidden test seeds its inputs with a literal (tests/test_house.py, tests/test_scaffold.py)."""
from __future__ import annotations

import ast
import re


def _docstring_nodes(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            found.add(id(node.body[0].value))
    return found


def exercise_mentions(source: str, exercises, library_names: set[str]) -> list[str]:
    """Where ``source`` hard-codes an exercise: its id or folder in a string (docstrings and
    comments aside), a string equal to its student module's or a contract name, a contract name
    as an identifier (names that torch or NumPy also define, ``softmax`` …, do not count), or an
    import of the exercise's own modules (its suite folder, its diagnosis module, its reference)."""
    ids = {ex.id for ex in exercises}
    folders = {ex.folder for ex in exercises}
    modules = {ex.module for ex in exercises}
    names = {n for ex in exercises for n in ex.names} - library_names
    tree = ast.parse(source)
    docs = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        hit = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
            if set(re.findall(r"\bex\d+\b", text)) & ids or any(f in text for f in folders) \
                    or text in modules or text in names:
                hit = repr(text[:60])
        elif isinstance(node, ast.Name) and node.id in names:
            hit = node.id
        elif isinstance(node, ast.Attribute) and node.attr in names:
            hit = f".{node.attr}"
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            hit = f"def {node.name}"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            dotted = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            for name in dotted:
                parts = name.split(".")
                if parts[:2] == ["autograder", "suites"] and parts[2:3] and parts[2] in folders \
                        or parts[:2] == ["autograder", "diagnosis"] and parts[2:3] and parts[2] in ids \
                        or parts[0] == "reference" and parts[1:2] and parts[1] in modules:
                    hit = f"import {name}"
                    break
        if hit:
            found.append((node.lineno, hit))
    return [f"line {line}: {hit}" for line, hit in sorted(found)]


_SEEDING = {"manual_seed", "default_rng", "RandomState", "Generator", "PCG64", "SeedSequence"}


def _seeding_call(node: ast.Call) -> bool:
    """``torch.manual_seed(…)``, ``np.random.default_rng(…)``, ``random.seed(…)``, … (not the
    kit's ``seeds.seed(offset)`` / ``common.seed(offset)``, which derive a seed from an offset)."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "seed":
        return isinstance(func, ast.Attribute) and ast.unparse(func.value).endswith("random")
    return name in _SEEDING


def literal_seeds(source: str) -> list[str]:
    """Seeds written as numbers: a seeding call (``torch.manual_seed(0)``, ``np.random.seed(3)``,
    ``default_rng(7)``, ``Generator().manual_seed(1)``) with an integer literal, or a name
    with ``SEED`` in it bound to one (``SEED = 0``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            if _seeding_call(node) and any(isinstance(a, ast.Constant) and type(a.value) is int
                                        for a in [*node.args, *(k.value for k in node.keywords)]):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node.value, ast.Constant) and type(node.value.value) is int and \
                    any("SEED" in ast.unparse(t).upper() for t in targets):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found
