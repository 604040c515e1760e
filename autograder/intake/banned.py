"""The APIs an exercise forbids, found in a source text with ``ast`` (nothing is run).

The static half of the rule: the worker refuses banned operators when they run
(:mod:`autograder.sandbox.opguard`), and the suites' banned-API check reports both."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from autograder.contract import Exercise, banned_operators


@dataclass(frozen=True)
class SourceFacts:
    """What one parse of a student file tells (nothing is run)."""
    banned: list[str] = field(default_factory=list)    # uses of forbidden APIs, "line 12: torch.nn.X"
    imports: frozenset[str] = frozenset()              # top-level packages its import statements name


def scan(source: str, ex: Exercise) -> SourceFacts:
    """The source parsed once: its uses of APIs ``ex`` forbids and the packages it imports
    (``import matplotlib.pyplot as plt`` and ``from matplotlib import pyplot``: ``matplotlib``;
    relative imports: none). A syntax error gives no facts (the worker reports it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return SourceFacts()
    nodes = list(ast.walk(tree))                  # walked once, read twice
    aliases = _import_aliases(nodes)              # every import statement: name -> dotted path
    return SourceFacts(_banned(tree, nodes, aliases, ex, _annotation_nodes(nodes)),
                       frozenset(dotted.split(".")[0] for dotted in aliases.values()))


def find_banned(source: str, ex: Exercise) -> list[str]:
    """Human-readable uses of APIs the exercise forbids, e.g. ``"line 12: torch.nn.MultiheadAttention"``."""
    return scan(source, ex).banned


def _banned(tree: ast.Module, nodes: list[ast.AST], aliases: dict[str, str], ex: Exercise,
            annotations: set[int]) -> list[str]:
    """``annotations``: the ids of the nodes inside type annotations, never a use (below)."""
    operators = banned_operators(ex)              # other doors: torch.ops.aten.X, torch._C._nn.X
    hits: list[str] = []
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in _in_scope(tree, nodes, functions, ex.banned_in):
        if id(node) in annotations:
            continue
        dotted = _dotted(node, aliases)
        if dotted and any(dotted == b or dotted.startswith(b + ".") for b in ex.banned):
            hits.append(f"line {node.lineno}: {dotted}")
        elif dotted and dotted.startswith("torch.") and any(p in operators for p in dotted.split(".")[1:]):
            hits.append(f"line {node.lineno}: {dotted}")
    callers = {name: name for name in ex.numpy_only if name in functions}   # function -> its caller
    for name in ex.numpy_only:
        for helper, via in _reachable(name, functions).items():
            callers.setdefault(helper, via)
    for name, via in callers.items():
        for node in ast.walk(functions[name]):
            dotted = _dotted(node, aliases) if id(node) not in annotations else None
            if dotted and dotted.split(".")[0] in ("torch", "scipy"):
                where = name if via == name else f"{name}, called from {via}"
                hits.append(f"line {node.lineno}: {dotted} inside {where} (NumPy only)")
                break
    return sorted(set(hits), key=lambda h: (int(h.split(":")[0].split()[1]), h))


def _in_scope(tree: ast.Module, nodes: list[ast.AST], functions: dict[str, ast.FunctionDef],
              banned_in: tuple[str, ...]) -> list[ast.AST]:
    """The nodes the bans apply to: every node but those of a top-level ``if __name__ ==
    "__main__":`` block (a self-check there never runs when graded, nor can it earn anything),
    or with ``banned_in`` those of the named top-level classes and functions and of the
    module's functions they call (by name, directly or through others)."""
    if not banned_in:
        main = {id(n) for block in tree.body if _is_main_block(block) for n in ast.walk(block)}
        return [n for n in nodes if id(n) not in main] if main else nodes
    roots = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
             and n.name in banned_in]
    scoped: list[ast.AST] = []
    for root in roots:
        inside = list(ast.walk(root))
        scoped.extend(inside)
        called = {n.func.id for n in inside if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        helpers = {name for name in called if name in functions}
        for name in list(helpers):
            helpers.update(_reachable(name, functions))
        for name in sorted(helpers - set(banned_in)):
            scoped.extend(ast.walk(functions[name]))
    return scoped


def _annotation_nodes(nodes: list[ast.AST]) -> set[int]:
    """The ids of every node inside a type annotation (a parameter's, a return's, an annotated
    assignment's target type). An annotation names a type and runs nothing of it (with ``from
    __future__ import annotations`` it is never even evaluated), so ``mask: torch.Tensor |
    None`` in a NumPy-only function is not torch used there, nor is ``-> nn.MultiheadAttention``
    a banned class used. Default values and decorators do run: they stay in."""
    roots: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(inner) for root in roots for inner in ast.walk(root)}


def _is_main_block(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either way round)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


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


def _import_aliases(nodes: list[ast.AST]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in nodes:
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
