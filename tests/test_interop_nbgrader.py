"""nbgrader interop, verified with the real tool; and notebook submissions through the native grader.

* The export's notebooks carry valid nbgrader metadata, one test cell per suite file, the
  kit's points, hidden tests between nbgrader's markers (fast, every exercise).
* The REAL ``nbgrader generate_assignment`` + ``nbgrader autograde`` on three students
  (solution, released stub, a missing-1/√d_k bug that also writes a warning to stderr):
  per-exercise totals from the gradebook equal the native grader's on the same code (ex1).
* ``attention.ipynb`` (nbgrader solution metadata; a plain notebook with magics) grades
  exactly like ``attention.py`` through the native grader.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import contract
from autograder.interop import adapter
from autograder.interop.nbgrader import export_nbgrader, split_solution
from helpers import grade_folder, make_submission, solution_file

VENV_BIN = Path(sys.executable).parent
EX = contract.BY_ID["ex1"]
SCALING = "/ np.sqrt(d_k)"
# a realistic bug (the scaling forgotten in the NumPy forward pass) that also prints a
# torch-style warning on stderr when the module has loaded (nbgrader must not zero a cell for it)
WARNING_LINE = 'import sys as _sys; print("UserWarning: TypedStorage is deprecated", file=_sys.__stderr__)\n'


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _solution_cells(nb) -> list:
    return [c for c in nb["cells"] if (c["metadata"].get("nbgrader") or {}).get("solution")]


def test_export_structure_for_every_exercise(tmp_path: Path):
    from nbgrader.preprocessors import CheckCellMetadata
    import nbformat
    written = export_nbgrader(tmp_path)
    assert (tmp_path / "nbgrader_config.py").is_file()
    assert "IgnorePattern.pattern" in (tmp_path / "nbgrader_config.py").read_text()
    notebooks = [p for p in written if p.suffix == ".ipynb"]
    assert notebooks, "no notebook exported"
    for path in notebooks:
        ex = contract.BY_MODULE[path.stem]
        nb = nbformat.read(path, as_version=4)
        CheckCellMetadata().preprocess(copy.deepcopy(nb), {})
        metas = [c.metadata.get("nbgrader") for c in nb.cells if c.metadata.get("nbgrader")]
        assert all(m["schema_version"] == 3 for m in metas)
        assert len({m["grade_id"] for m in metas}) == len(metas), "grade ids must be unique"
        graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        groups = adapter.groups(ex.id)
        assert len(graded) == len(groups), "one test cell per suite file"
        assert sum(c.metadata.nbgrader.points for c in graded) == pytest.approx(ex.points, abs=1e-3)
        for cell, (group, tests) in zip(graded, groups.items()):
            assert repr(group) in cell.source and cell.metadata.nbgrader.locked
            hidden = "### BEGIN HIDDEN TESTS" in cell.source
            assert hidden == (not all(t.public for t in tests)), group
        # the solution cells together are the model solution, regions intact
        joined = "\n\n".join(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
        solution = (Path(__file__).resolve().parents[1] / "solutions" / ex.folder / ex.filename).read_text()
        assert [ln for ln in joined.splitlines() if ln.strip()] == [ln for ln in solution.splitlines() if ln.strip()]


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([str(VENV_BIN / "nbgrader"), *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done


def _student_notebook(release: dict, source: dict, change=None, suffix: str = "") -> dict:
    """The released notebook with its solution cells answered by the source's, optionally
    altered, ``suffix`` appended to the last one."""
    nb = copy.deepcopy(release)
    answers = {c["metadata"]["nbgrader"]["grade_id"]: _text(c) for c in _solution_cells(source)}
    cells = _solution_cells(nb)
    for cell in cells:
        text = answers[cell["metadata"]["nbgrader"]["grade_id"]]
        cell["source"] = change(text) if change else text
    cells[-1]["source"] = cells[-1]["source"].rstrip("\n") + "\n" + suffix
    return nb


@pytest.mark.slow
def test_real_nbgrader_autograde_matches_native_grader(tmp_path: Path, gradings):
    started = time.monotonic()
    course = tmp_path / "course"
    export_nbgrader(course, (EX,))
    assignment = EX.folder
    _nbgrader(course, "generate_assignment", assignment)
    release = json.loads((course / "release" / assignment / EX.notebook).read_text())
    source = json.loads((course / "source" / assignment / EX.notebook).read_text())
    released_text = "\n".join(_text(c) for c in release["cells"])
    assert "BEGIN HIDDEN TESTS" not in released_text and "BEGIN SOLUTION" not in released_text
    assert "grade_cell('ex1', 'test_forward_np.py')" not in released_text, "hidden call leaked"

    solution_py = solution_file(EX.id).read_text()
    assert SCALING in solution_py, "the bug below needs the solution's scaling expression"
    students = {
        "solution": (_student_notebook(release, source), solution_py),
        "stub": (release, (Path(__file__).resolve().parents[1] / "assignments" / EX.folder / EX.filename).read_text()),
        "no_scaling": (_student_notebook(release, source, lambda t: t.replace(SCALING, ""), WARNING_LINE),
                       solution_py.replace(SCALING, "").rstrip("\n") + "\n" + WARNING_LINE),
    }
    for student, (nb, _) in students.items():
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / EX.notebook).write_text(json.dumps(nb))
    tool_started = time.monotonic()
    done = _nbgrader(course, "autograde", assignment)
    autograde_seconds = time.monotonic() - tool_started

    from nbgrader.api import Gradebook
    tool: dict[str, float] = {}
    cells: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in students:
            sub = gb.find_submission_notebook(EX.module, assignment, student)
            tool[student] = sub.score
            cells[student] = {g.name: g.score for g in sub.grades}
            assert sub.max_score == pytest.approx(EX.points)

    native = {student: gradings.score(make_submission(tmp_path / f"native-{student}", {EX.filename: py}), EX.id)
              for student, (_, py) in students.items()}
    print(f"\nnbgrader autograde ({len(students)} notebooks): {autograde_seconds:.1f} s; "
          f"whole test {time.monotonic() - started:.1f} s")
    print("nbgrader gradebook:", tool, "\nnative grader:    ", native)
    print("per cell (no_scaling):", cells["no_scaling"])
    for student in students:
        assert tool[student] == pytest.approx(native[student], abs=1e-3), (student, tool, native, done.stderr[-3000:])
    assert tool["solution"] == pytest.approx(EX.points) and tool["stub"] == 0
    assert 0 < tool["no_scaling"] < EX.points


@pytest.mark.slow
def test_notebook_submissions_grade_like_the_py_file(tmp_path: Path):
    """attention.ipynb (nbgrader metadata, test cells included; or plain with magics) == attention.py."""
    export_nbgrader(tmp_path / "course", (EX,))
    marked = (tmp_path / "course" / "source" / EX.folder / EX.notebook).read_text()
    py = solution_file(EX.id).read_text()
    buggy = py.replace(SCALING, "")
    import nbformat
    v4 = nbformat.v4

    def plain(text: str) -> str:
        cells = [v4.new_code_cell("%matplotlib inline\n%load_ext autoreload")]
        cells += [v4.new_code_cell(chunk) for chunk in split_solution(text)]
        cells += [v4.new_code_cell("!ls -la\nout, w = scaled_dot_product_attention_np(*[np.eye(2)] * 3)"),
                  v4.new_code_cell("%%timeit\nsoftmax(np.zeros(3))")]
        return nbformat.writes(v4.new_notebook(cells=cells))

    cases = {"py": {EX.filename: py}, "marked_ipynb": {EX.notebook: marked},
             "plain_ipynb": {EX.notebook: plain(py)},
             "buggy_py": {EX.filename: buggy}, "buggy_plain_ipynb": {EX.notebook: plain(buggy)}}
    scores = {}
    for name, files in cases.items():
        results = grade_folder(make_submission(tmp_path / name, files), EX.id)
        scores[name] = (results.by_exercise()[EX.id][0], sorted(t.name for t in results.tests if not t.passed))
    print("\nnative scores:", {k: v[0] for k, v in scores.items()})
    assert scores["py"][0] == pytest.approx(EX.points)
    assert scores["marked_ipynb"] == scores["py"] == scores["plain_ipynb"]
    assert scores["buggy_plain_ipynb"] == scores["buggy_py"] and scores["buggy_py"][0] < EX.points
