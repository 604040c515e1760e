"""nbgrader export: a course folder whose test cells call the kit's suites.

``export_nbgrader(out)`` writes ``out/`` =

    nbgrader_config.py                  IgnorePattern for warnings on stderr, cell time limit
    README.md                           the commands
    source/<folder>/<module>.ipynb      one assignment per exercise (ex1_attention/attention.ipynb)

Each notebook holds the exercise's model solution from ``solutions/<folder>/<module>.py``,
split into solution cells (nbgrader metadata, schema version 3) that keep the file's
``### BEGIN SOLUTION`` / ``### END SOLUTION`` regions, then one locked, autograded test cell
per suite file of ``autograder/suites/<folder>/``: the public file's cell is visible, the
others call the kit between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``. A cell is
worth the kit's points for its tests; it prints a per-test report and ends with the points
earned as its value, which nbgrader takes as partial credit. The tests themselves are
never copied: :func:`grade_cell` runs them from the installed kit (``autograder.interop.adapter``).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from autograder import contract
from autograder.interop import adapter
from autograder.packaging.release.markers import BEGIN, END

ASSIGNMENT_NOTE = ("The test cells below call the course's autograder (the `autograder` package must be "
                   "installed in this kernel). Your code runs in the same kernel as the tests.")
STDERR_IGNORE = r"Warning|warn\("          # torch/numpy warnings on stderr must not zero a cell
CELL_TIMEOUT = 300

CONFIG = f'''"""nbgrader configuration for the attention kit's export (generated; do not edit)."""
c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = "attention"
# Any stderr output scores a test cell 0 in nbgrader; warnings (torch, numpy) are not failures.
c.IgnorePattern.pattern = r"{STDERR_IGNORE}"
# The first test cell of a notebook runs the exercise's whole suite (later cells reuse it).
c.Execute.timeout = {CELL_TIMEOUT}
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
'''


# ----------------------------------------------------------------------------- runtime (in the kernel)

def grade_cell(exercise_id: str, group: str, scale: float = 1.0) -> float:
    """What an autograded test cell calls: the points earned by one group of kit tests.

    Prints one line per test (and the kit's failure message); returns the points, which
    the cell shows as its value and nbgrader reads as partial credit. ``scale``: the
    build's ``--points`` override over ``Exercise.points``.
    """
    tests = adapter.groups(exercise_id).get(group)
    if not tests:
        raise LookupError(f"{exercise_id}: no kit tests in {group!r}; regenerate the nbgrader export")
    source, origin = adapter.kernel_source(exercise_id)
    outcomes = adapter.run_exercise(exercise_id, source, origin)
    print(f"{exercise_id}: graded {origin}" if source is not None else f"{exercise_id}: no code found")
    earned = 0.0
    for t in tests:
        o = outcomes.get(t.nodeid)
        ok = bool(o and o.passed)
        earned += t.points * scale if ok else 0.0
        print(f"{'PASS' if ok else 'FAIL'}  {t.name}  ({t.points * scale:g} pt)")
        if not ok:
            message = o.output if o else "this test did not run"
            print("      " + message.strip().replace("\n", "\n      "))
    return round(min(earned, adapter.group_points(tests) * scale), 4)


# ----------------------------------------------------------------------------- export

def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
          points: float | None = None) -> dict:
    meta = {"schema_version": 3, "grade_id": grade_id, "solution": solution, "grade": grade,
            "locked": locked, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def split_solution(text: str) -> list[str]:
    """The module as solution cells: cut before top-level defs/classes (and the comments
    right above them), never inside a solution region; every cell keeps at least one region,
    so that nbgrader clears only the regions and never a whole cell."""
    lines = text.splitlines()
    inside, depth = set(), 0
    for i, line in enumerate(lines, start=1):
        if line.strip() == f"### {BEGIN}":
            depth += 1
        if depth:
            inside.add(i)
        if line.strip() == f"### {END}":
            depth -= 1
    cuts = {1}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            while start > 1 and lines[start - 2].lstrip().startswith("#"):
                start -= 1
            if start not in inside:
                cuts.add(start)
    bounds = sorted(cuts) + [len(lines) + 1]
    chunks = ["\n".join(lines[a - 1:b - 1]).strip("\n") for a, b in zip(bounds, bounds[1:])]
    cells: list[str] = []
    pending = ""
    for chunk in chunks:
        pending = f"{pending}\n\n{chunk}" if pending else chunk
        if f"### {BEGIN}" in pending:
            cells.append(pending)
            pending = ""
    if pending:
        if cells:
            cells[-1] += "\n\n" + pending
        else:
            cells.append(pending)
    return [c.strip("\n") + "\n" for c in cells if c.strip()]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower().removesuffix(".py")).strip("_")


def test_cell_source(ex: contract.Exercise, group: str, tests: list[adapter.TestInfo],
                     scale: float = 1.0) -> str:
    public = all(t.public for t in tests)
    head = (f"# {ex.id} · {'public' if public else 'hidden'} tests from the kit's suite file "
            f"{group.split('#')[0]}: {len(tests)} test{'s' * (len(tests) != 1)}, "
            f"{round(adapter.group_points(tests) * scale, 4):g} points. Do not edit: this cell is replaced at grading.\n"
            "from autograder.interop.nbgrader import grade_cell\n")
    call = f"grade_cell({ex.id!r}, {group!r}{f', scale={scale!r}' if scale != 1.0 else ''})\n"
    return head + (call if public else f"### BEGIN HIDDEN TESTS\n{call}### END HIDDEN TESTS\n")


def notebook_for(ex: contract.Exercise, root: Path, scale: float = 1.0):
    """The source (instructor) notebook of one exercise."""
    import nbformat
    from autograder.packaging.release.steps import normalise_notebook
    text = (root / "solutions" / ex.folder / ex.filename).read_text(encoding="utf-8")
    v4 = nbformat.v4
    cells = [v4.new_markdown_cell(f"# {ex.id} · {ex.title}\n\nComplete every cell marked "
                                  f"`YOUR CODE HERE`; together they are `{ex.filename}`. "
                                  f"{ASSIGNMENT_NOTE}")]
    for i, chunk in enumerate(split_solution(text), start=1):
        cells.append(v4.new_code_cell(chunk, metadata=_meta(f"{ex.id}-solution-{i}", solution=True)))
    cells.append(v4.new_markdown_cell("## Tests\n\nEach cell below is worth the points it names; "
                                      "hidden tests run only when the course grades the notebook."))
    for group, tests in adapter.groups(ex.id).items():
        cells.append(v4.new_code_cell(
            test_cell_source(ex, group, tests, scale),
            metadata=_meta(f"{ex.id}-{_slug(group)}", grade=True, locked=True,
                           points=round(adapter.group_points(tests) * scale, 4))))
    return normalise_notebook(v4.new_notebook(cells=cells))


def export_nbgrader(out: Path, exercises: tuple[contract.Exercise, ...] | None = None,
                    root: Path | None = None, points: dict[str, float] | None = None) -> list[Path]:
    """Write the nbgrader course folder ``out``; returns the files written."""
    from autograder import repo_root
    from autograder.packaging.release.steps import dump_notebook
    root = root or repo_root()
    out = Path(out)
    written = []
    for ex in exercises or contract.DEFAULT:
        if not (root / "solutions" / ex.folder / ex.filename).is_file() or not adapter.collect_tests(ex.id):
            continue
        path = out / "source" / ex.folder / ex.notebook
        path.parent.mkdir(parents=True, exist_ok=True)
        scale = (points or {}).get(ex.id, ex.points) / ex.points
        path.write_text(dump_notebook(notebook_for(ex, root, scale)), encoding="utf-8")
        written.append(path)
    from autograder.packaging.build import remove_stale
    remove_stale(out / "source", [p.parent.name for p in written],
                 lambda folder: any(folder.glob("*.ipynb")))
    (out / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    first = (exercises or contract.DEFAULT or contract.EXERCISES)[0]
    (out / "README.md").write_text(README.format(folder=first.folder, notebook=first.notebook), encoding="utf-8")
    return written + [out / "nbgrader_config.py", out / "README.md"]


def export(ctx) -> list[Path]:
    """Build step ``nbgrader`` (autograder.packaging.build): ``dist/nbgrader/``."""
    written = export_nbgrader(ctx.out / "nbgrader", ctx.exercises, ctx.root, ctx.points)
    ctx.say(f"nbgrader:   {ctx.out / 'nbgrader'}  ({sum(p.suffix == '.ipynb' for p in written)} "
            "assignments, one notebook each)")
    return written


README = """# nbgrader export of the attention kit (generated by `python -m autograder build`)

One nbgrader assignment per exercise: `source/<exercise folder>/<module>.ipynb`. Test cells
call the installed `autograder` package, which must be importable in the grading kernel.

    cd dist/nbgrader
    nbgrader generate_assignment {folder}          # release/{folder}/{notebook}
    # collect submissions into submitted/<student>/{folder}/{notebook}, then
    nbgrader autograde {folder}
    nbgrader export                                     # totals; per-cell scores: the gradebook

Student code runs in the same kernel as the tests and can read the kit's files; use the
kit's native grader (`python -m autograder grade`, the Gradescope zip) where that matters.
"""
