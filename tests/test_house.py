"""The kit's house rules: no import cycle, a torch-free sandbox configuration, one
definition of each shared constant, and a map (docs/ARCHITECTURE.md) that names every module.

Import graph, as decided here:

* nodes are the modules of ``autograder/`` (a package is its ``__init__``); an edge A -> B is an
  ``import`` / ``from … import`` in A that names B (``from autograder.x import y`` points at
  ``autograder.x.y`` when that is a module, else at ``autograder.x``);
* **module-level** imports (including those inside module-level ``if``/``try``) are the ones
  that run when A is imported: a cycle among them gives half-initialised modules and
  import-order bugs, so there must be none (:func:`test_no_import_cycle_at_module_level`);
* imports inside functions run later, when the function is called. They are dependencies
  all the same, so cycles through them are listed too (:func:`test_deferred_import_cycles`)
  and may only shrink: a new one fails, a fixed one must leave the list;
* an ``if __name__ == "__main__":`` block is not part of the module: when it runs the file
  is ``__main__``, a different module, so its imports are not edges of the file's module;
  likewise ``if TYPE_CHECKING:`` blocks, which never run.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from source_rules import exercise_mentions, literal_seeds

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "autograder"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"

# Cycles through imports made inside functions that are known and not fixed yet (each a set
# of modules). Remove an entry once its cycle is gone; never add one.
KNOWN_DEFERRED_CYCLES: list[frozenset[str]] = []


# --------------------------------------------------------------------------- the import graph


def module_name(path: Path, root: Path) -> str:
    """``root/autograder/sandbox/limits.py`` -> ``autograder.sandbox.limits``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def kit_modules(root: Path, package: str = "autograder") -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))
            if "__pycache__" not in p.parts}


def _skipped_block(node: ast.If) -> bool:
    """``if __name__ == "__main__":`` and ``if TYPE_CHECKING:`` (see the module docstring)."""
    test = node.test
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return True
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def _imports(tree: ast.Module, module_level: bool) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _skipped_block(child):
                for other in child.orelse:
                    visit_one(other, top)
                continue
            visit_one(child, top)

    def visit_one(child: ast.AST, top: bool) -> None:
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            if top or not module_level:
                found.append(child)
            return
        nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if module_level and nested:
            return
        visit(child, top and not nested)

    visit(tree, True)
    return found


def _targets(node: ast.Import | ast.ImportFrom, current: str, is_package: bool,
             modules: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:                                  # relative import
            package = current.split(".") if is_package else current.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    targets = set()
    for name in names:
        while name and name not in modules:             # `import autograder.x.y` with y a name
            name = name.rpartition(".")[0]
        if name and name != current:
            targets.add(name)
    return targets


def import_graph(root: Path, module_level: bool, package: str = "autograder") -> dict[str, set[str]]:
    """``{module: {kit modules it imports}}`` for the package under ``root``."""
    modules = kit_modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = set()
        for node in _imports(tree, module_level):
            graph[name] |= _targets(node, name, path.name == "__init__.py", modules)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _show(found: list[frozenset[str]], graph: dict[str, set[str]]) -> str:
    return "\n".join(" <-> ".join(sorted(c)) + "\n    " + "\n    ".join(
        f"{m} imports {', '.join(sorted(graph[m] & c))}" for m in sorted(c)) for c in found)


def test_the_graph_sees_module_function_relative_and_main_imports(tmp_path):
    pkg = tmp_path / "autograder"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import a\n")
    (pkg / "sub" / "a.py").write_text("import os\nfrom autograder.sub.b import thing\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .c import x\n")
    (pkg / "sub" / "c.py").write_text("import autograder.sub.a\nif __name__ == '__main__':\n"
                                      "    from autograder.sub import b\n")
    top = import_graph(tmp_path, module_level=True)
    every = import_graph(tmp_path, module_level=False)
    assert top == {"autograder": set(), "autograder.sub": {"autograder.sub.a"},
                   "autograder.sub.a": {"autograder.sub.b"}, "autograder.sub.b": set(),
                   "autograder.sub.c": {"autograder.sub.a"}}
    assert every["autograder.sub.b"] == {"autograder.sub.c"}
    assert cycles(top) == []
    assert cycles(every) == [frozenset({"autograder.sub.a", "autograder.sub.b", "autograder.sub.c"})]


def test_no_import_cycle_at_module_level():
    graph = import_graph(ROOT, module_level=True)
    assert "autograder.packaging.zips" in graph["autograder.packaging.exports.gradescope"]   # the graph is real
    found = cycles(graph)
    assert not found, "import cycles among module-level imports:\n" + _show(found, graph)


def test_deferred_import_cycles():
    graph = import_graph(ROOT, module_level=False)
    found = set(cycles(graph))
    new = [c for c in found if c not in KNOWN_DEFERRED_CYCLES]
    assert not new, "new import cycles (through imports inside functions):\n" + _show(new, graph)
    fixed = [sorted(c) for c in KNOWN_DEFERRED_CYCLES if c not in found]
    assert not fixed, f"these cycles are gone: remove them from KNOWN_DEFERRED_CYCLES: {fixed}"


def test_packaging_has_no_cycle_even_through_deferred_imports():
    graph = import_graph(ROOT, module_level=False)
    packaging = {m: {t for t in ts if t.startswith("autograder.packaging.")}
                 for m, ts in graph.items() if m.startswith("autograder.packaging.")}
    found = cycles(packaging)
    assert not found, _show(found, graph)


# --------------------------------------------------------------------------- light imports


@pytest.mark.parametrize("module", ["autograder.sandbox.limits", "autograder.sandbox", "autograder.contract"])
def test_the_sandbox_configuration_imports_without_torch(module):
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('torch', 'numpy', 'pytest') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.strip()
    assert "torch" not in loaded, f"import {module} loads {loaded}"


# --------------------------------------------------------------------------- shared constants


def _constants() -> list[tuple[str, object, re.Pattern[str], str]]:
    """(what, value, names a definition of it may have, the one module that defines it)."""
    from autograder import budget
    from autograder.sandbox import limits
    return [
        ("the worker user", limits.WORKER_USER, re.compile(r"user", re.I), "autograder/sandbox/limits.py"),
        ("the default call timeout", limits.DEFAULT_CALL_TIMEOUT, re.compile(r"(^|_|-)timeout$", re.I),
         "autograder/sandbox/limits.py"),
        ("the default exercise budget", budget.DEFAULT_BUDGET_S, re.compile(r"budget", re.I),
         "autograder/budget.py"),
    ]


def _is_value(node: ast.AST | None, value: object) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) is not bool
            and type(node.value) in (type(value), int, float) and node.value == value)


def definitions(tree: ast.Module, value: object, names: re.Pattern[str]) -> list[int]:
    """Line numbers where ``value`` is written as a literal and bound to a name matching
    ``names``: an assignment, a parameter default, a dataclass field, or ``default=`` in a call
    whose option string matches (``add_argument("--timeout", default=20.0)``). A string value
    counts wherever it is written as a whole literal (a user name is never a coincidence)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_value(node.value, value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(value, str) or any(names.search(ast.unparse(t)) for t in targets):
                lines.append(node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            lines += [d.lineno for a, d in pairs if _is_value(d, value) and (isinstance(value, str)
                                                                               or names.search(a.arg))]
        elif isinstance(node, ast.Call):
            options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            for kw in node.keywords:
                if kw.arg == "default" and _is_value(kw.value, value) and (
                        isinstance(value, str) or any(names.search(o) for o in options)):
                    lines.append(kw.value.lineno)
    return sorted(set(lines))


def test_definitions_finds_assignments_defaults_and_options():
    tree = ast.parse("X_TIMEOUT = 20.0\nlimit = 20\ndef f(call_timeout=20, other=20): ...\n"
                     "p.add_argument('--timeout', type=float, default=20.0)\n"
                     "p.add_argument('--memory', default=20)\nUSER = 'ag-x'\nf(user='ag-x')\n")
    assert definitions(tree, 20.0, re.compile(r"(^|_|-)timeout$", re.I)) == [1, 3, 4]
    assert definitions(tree, "ag-x", re.compile("user")) == [6]


@pytest.mark.parametrize("index", range(3), ids=["worker-user", "call-timeout", "exercise-budget"])
def test_shared_constants_are_defined_once(index):
    what, value, names, home = _constants()[index]
    where = []
    for folder in ("autograder", "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in path.parts or "student_corpus" in path.parts or path == Path(__file__).resolve():
                continue                      # the corpus is students' code, not the kit's
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            where += [f"{path.relative_to(ROOT).as_posix()}:{line}" for line in definitions(tree, value, names)]
    assert [w.rsplit(":", 1)[0] for w in where] == [home], (
        f"{what} ({value!r}) should be defined once, in {home}, and imported elsewhere; "
        f"literal definitions: {where}")


# --------------------------------------------------------------------------- the map


def kit_places(root: Path = ROOT) -> list[str]:
    """What docs/ARCHITECTURE.md must name: every module as its path under ``autograder/``
    (``sandbox/limits.py``), every subpackage as ``name/``. The exercises are places of one
    kind, named once: every exercise's folder by ``suites/<folder>/`` and its diagnosis module
    by ``diagnosis/<id>.py`` (a new exercise needs no line of its own in the map)."""
    from autograder import contract
    folders = {ex.folder for ex in contract.discover(root / "autograder" / "suites")} \
        if root == ROOT else set()
    ids = {ex.id for ex in contract.EXERCISES} if root == ROOT else set()
    places = set()
    for path in (root / "autograder").rglob("*.py"):
        rel = path.relative_to(root / "autograder")
        if "__pycache__" in rel.parts:
            continue
        if rel.parts[0] == "suites" and len(rel.parts) > 2:
            places.add("suites/<folder>/" if rel.parts[1] in folders else f"suites/{rel.parts[1]}/")
            continue
        if rel.parts[0] == "diagnosis" and rel.stem in ids:
            places.add("diagnosis/<id>.py")
            continue
        if rel.name == "__init__.py":
            if len(rel.parts) > 1:
                places.add("/".join(rel.parts[:-1]) + "/")
            continue
        places.add(rel.as_posix())
    return sorted(places)


def test_architecture_names_every_module_and_subpackage():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    places = kit_places()
    assert "sandbox/limits.py" in places and "interop/" in places and "suites/<folder>/" in places
    missing = [p for p in places if not re.search(rf"(?<![\w/]){re.escape(p)}", text)]
    assert not missing, f"docs/ARCHITECTURE.md does not place: {', '.join(missing)}"


# --------------------------------------------------------------------------- the sandbox's privacy

def sandbox_private_names(sources: list[str]) -> set[str]:
    """Names the sandbox keeps to itself: its ``_functions``, ``_Classes``, ``_CONSTANTS`` and
    the ``self._attributes`` of its objects."""
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_reach_ins(source: str, private: set[str]) -> list[str]:
    """``obj._name`` (``obj`` not ``self``/``cls``) and ``from autograder.sandbox… import _name``
    in ``source``, for the sandbox's private names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private and \
                not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder.sandbox"):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_private_reach_in_is_found():
    private = sandbox_private_names(["class S:\n    def _raw(self):\n        self._generation = 1\n"])
    assert private == {"_raw", "_generation"}
    source = "def f(sb):\n    sb._generation += 1\n    return sb._raw()\nfrom autograder.sandbox.session import _raw\n"
    assert len(private_reach_ins(source, private)) == 3
    assert private_reach_ins("class T:\n    def g(self):\n        return self._raw()\n", private) == []


def test_nothing_outside_the_sandbox_reaches_into_it():
    """budget.py, proxy's callers and the rest use the sandbox's public interface
    (``request(…, timeout=)``, ``discard_worker()``, ``enter()``), never its private names."""
    sandbox = KIT / "sandbox"
    private = sandbox_private_names([p.read_text(encoding="utf-8") for p in sandbox.glob("*.py")])
    assert len(private) > 50                  # the scan sees the sandbox's internals
    found = {str(p.relative_to(ROOT)): hits for p in sorted(KIT.rglob("*.py")) if sandbox not in p.parents
             if (hits := private_reach_ins(p.read_text(encoding="utf-8"), private))}
    assert not found, found


def test_causes_are_written_in_one_place():
    """A likely cause reaches a message only through ``checks.fail(message, cause)``
    (which also makes it the result's ``extra_data.cause``), never typed into a message."""
    suites = KIT / "suites"
    typed = [f"{p.relative_to(ROOT)}:{i}" for p in sorted(suites.rglob("*.py")) if p.name != "checks.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "Likely cause:" in line and not line.lstrip().startswith(('"""', "#"))
             and i > 3]                                      # module docstrings may name it
    assert not typed, typed


# --------------------------------------------------------------------------- the map, both ways; no tracker

def test_every_module_architecture_names_exists():
    """Every ``something.py`` or ``folder/`` path the map names under the kit exists."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[a-z_0-9]+/)*[a-z_0-9]+\.py)`", text)) | set(re.findall(r"`((?:[a-z_0-9]+/)+)`", text))
    files = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/**/*.py") if ".venv" not in p.parts}
    folders = {f.rsplit("/", 1)[0] + "/" for f in files}
    known = files | folders
    missing = [p for p in sorted(named)
               if not any(k == p or k.endswith("/" + p) for k in known) and not (ROOT / p).exists()
               and not (KIT / p).exists() and p != "dist/"]          # dist/: what `build` writes
    assert not missing, f"docs/ARCHITECTURE.md names what does not exist: {missing}"


TRACKER = re.compile(r"\b[Ii]ssues? ?#?\d+|\(issue\b|\bissue round\b")


def test_no_reference_to_an_outside_tracker():
    """Docstrings, comments and docs explain themselves: no "issue 12" a reader cannot look up."""
    corpora = ("held_out_corpus", "student_corpus", "contract_corpus", "submissions")
    paths = [p for folder in ("autograder", "tests", "bench", "docs") for p in (ROOT / folder).rglob("*")
             if p.suffix in (".py", ".md") and not any(c in p.parts for c in corpora)] + [ROOT / "README.md"]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in paths
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if TRACKER.search(line) and p.name != "test_house.py"]
    assert not found, f"references to an outside tracker: {found[:20]}"


def _bare_dicts(path: Path) -> list[str]:
    """Public functions whose parameters or return are annotated with a bare ``dict``."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for annotation in [a.annotation for a in arguments] + [node.returns]:
                if isinstance(annotation, ast.Name) and annotation.id in ("dict", "Dict"):
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return hits


def test_no_bare_dict_in_a_public_signature():
    """Records are dataclasses; JSON read or written is ``jsontypes.JSONObject``; mappings
    say what they map (``dict[str, float]``)."""
    found = [hit for path in sorted(KIT.rglob("*.py")) for hit in _bare_dicts(path)]
    assert not found, f"bare dict in public signatures: {found}"


# --------------------------------------------------------------------------- one folder per exercise

def test_exercise_mentions_are_found():
    from autograder.exercise import Exercise
    ex = Exercise(id="ex7", folder="ex7_topic", module="topic", title="T", names=("solve_it", "softmax"))
    source = ('"""ex7 in a docstring is fine."""\nimport reference.topic\nfrom autograder.suites.ex7_topic import common\n'
              'HELP = "e.g. ex7"\nf(x).solve_it()\nBANS = ("softmax",)\nNAME = "topic"\n')
    assert exercise_mentions(source, [ex], {"softmax"}) == [
        "line 2: import reference.topic", "line 3: import autograder.suites.ex7_topic",
        "line 4: 'e.g. ex7'", "line 5: .solve_it", "line 7: 'topic'"]


def test_no_module_outside_the_exercise_folders_names_an_exercise():
    """An exercise is its folder (``autograder/suites/<folder>/``: suite, registry row, contract
    sentences, coverage rows, notes for ``check``) and its diagnosis module
    (``autograder/diagnosis/<id>.py``); every other module of the kit reads the registry."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from autograder import contract
    library = {n for ex in contract.EXERCISES for n in ex.names
               if any(hasattr(lib, n) for lib in (torch, F, np, torch.nn.Module, torch.Tensor))}
    own = [contract.SUITES / ex.folder for ex in contract.EXERCISES] + \
        [KIT / "diagnosis" / f"{ex.id}.py" for ex in contract.EXERCISES]
    found = {}
    for path in sorted(KIT.rglob("*.py")):
        if "__pycache__" in path.parts or any(path == o or o in path.parents for o in own):
            continue
        hits = exercise_mentions(path.read_text(encoding="utf-8"), contract.EXERCISES, library)
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert not found, found


# --------------------------------------------------------------------------- hidden inputs

def test_literal_seeds_are_found():
    source = ("import torch\nSEED = 0\ng = torch.Generator().manual_seed(SEED + 1)\ntorch.manual_seed(3)\n"
              "rng = np.random.default_rng(seed=7)\nok = seeds.rng(4)\nnp.random.seed(5)\nfine = common.seed(6)\n")
    assert literal_seeds(source) == ["line 2: SEED = 0", "line 4: torch.manual_seed(3)",
                                     "line 5: np.random.default_rng(seed=7)", "line 7: np.random.seed(5)"]


def test_hidden_tests_draw_no_literal_seeds():
    """Hidden inputs come from ``autograder.seeds`` (the build's secret, the submission, the
    test): a literal seed would give every submission the same, replayable inputs. Public tests
    keep theirs (students reproduce them)."""
    from autograder import contract
    found = {}
    for ex in contract.EXERCISES:
        for path in sorted((contract.SUITES / ex.folder).rglob("*.py")):
            if "public" in path.relative_to(contract.SUITES / ex.folder).parts:
                continue
            hits = literal_seeds(path.read_text(encoding="utf-8"))
            if hits:
                found[str(path.relative_to(ROOT))] = hits
    assert not found, found


# --------------------------------------------------------------------------- the kit's tests

def test_no_test_file_is_imported_as_a_library():
    """What several test files share lives in a module of its own (helpers.py, gradings.py,
    hostile_cases.py, student_corpus_cases.py, contract_corpus_cases.py, source_rules.py …):
    importing a test file runs its collection-time code and ties files together."""
    found = []
    for path in sorted([*(ROOT / "tests").glob("*.py"), *(ROOT / "bench").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                      if n.split(".")[0].startswith("test_")]
    assert not found, found
