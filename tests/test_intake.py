"""Intake reads only plain files that really lie inside the submission, within one budget.

Each test builds a submission on disk (links, hard links, FIFOs, zips, notebooks) and
checks what ``intake.collect`` makes of it: ``Found.kind`` ("found" / "missing" /
"refused"), the message, and that nothing outside the submission was read.
"""
from __future__ import annotations

import base64
import io
import json
import os
import stat
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from autograder import contract, intake

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "ex1_attention" / "attention.py"
EX1 = contract.select("ex1")
BOM = b"\xef\xbb\xbf"


def ex1(path: Path, **kwargs) -> intake.Found:
    return intake.collect(path, EX1, **kwargs).found["ex1"]


def notebook(cells: list, **meta) -> str:
    return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})


def code_cell(source, **metadata) -> dict:
    return {"cell_type": "code", "source": source, "metadata": metadata, "outputs": []}


# --------------------------------------------------------------------------- links

def test_a_symlink_to_the_reference_is_refused_and_names_the_file(tmp_path):
    (tmp_path / "attention.py").symlink_to(ROOT / "reference" / "attention.py")
    found = ex1(tmp_path)
    assert found.kind == "refused" and found.source is None
    assert found.problem.startswith("refused: attention.py is a symbolic link")


@pytest.mark.parametrize("target", ["/etc/shadow", "/proc/self/environ", "/dev/zero"])
def test_links_to_system_files_are_never_read(tmp_path, target):
    sub = tmp_path / "sub" / "ex1_attention"
    sub.mkdir(parents=True)
    (sub / "attention.py").symlink_to(target)
    found = ex1(tmp_path / "sub")
    assert found.kind == "refused" and found.source is None
    assert "ex1_attention/attention.py is a symbolic link" in found.problem


def test_a_symlinked_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "attention.py").write_text(SOLUTION.read_text())
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "ex1_attention").symlink_to(outside, target_is_directory=True)
    found = ex1(sub)
    assert found.kind == "refused" and found.source is None
    assert "ex1_attention is a symbolic link" in found.problem


def test_a_dangling_or_looping_link_costs_only_its_exercise(tmp_path):
    (tmp_path / "attention.py").symlink_to(tmp_path / "attention.py")       # a loop
    (tmp_path / "causal.py").write_text("x = 1\n")
    sub = intake.collect(tmp_path, contract.select("ex1,ex4"))
    assert sub.found["ex1"].kind == "refused"
    assert sub.found["ex4"].kind == "found" and sub.found["ex4"].source == "x = 1\n"


def test_a_hard_link_is_refused(tmp_path):
    outside = tmp_path / "reference_copy.py"
    outside.write_text(SOLUTION.read_text())
    sub = tmp_path / "sub"
    sub.mkdir()
    os.link(outside, sub / "attention.py")
    found = ex1(sub)
    assert found.kind == "refused" and found.source is None
    assert "attention.py is a hard link" in found.problem


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "attention.py")
    found = ex1(tmp_path)
    assert found.kind == "refused" and "attention.py is not a regular file" in found.problem


def test_a_zip_member_that_is_a_symlink_is_refused(tmp_path):
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("work/attention.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/shadow")
    found = ex1(archive)
    assert found.kind == "refused" and found.source is None
    assert "work/attention.py is a symbolic link" in found.problem


def test_a_plain_file_and_zip_still_work(tmp_path):
    (tmp_path / "attention.py").write_text(SOLUTION.read_text())
    found = ex1(tmp_path)
    assert found.kind == "found" and found.source == SOLUTION.read_text() and found.problem is None
    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("my work/attention.py", SOLUTION.read_text())
    assert ex1(archive).source == SOLUTION.read_text()
    missing = ex1(tmp_path / "nothing-here")
    assert missing.kind == "missing" and "was not found" in missing.problem


@pytest.mark.parametrize("how", ["raw UTF-8 bytes", "Info-ZIP unicode path field"])
def test_a_zip_member_named_in_utf8_without_the_flag_is_named_as_written(tmp_path, how):
    """Info-ZIP's `zip` on Linux stores a name's UTF-8 bytes without the UTF-8 flag; zipfile
    reads them as cp437 ("M\u251c\u255dller"). Messages show the name as the student wrote it."""
    from autograder.zipnames import without_utf8_flags

    folder, buffer = "Müller Hans - Abgabe (2)", io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        if how == "raw UTF-8 bytes":
            zf.writestr(f"{folder}/attention.py", SOLUTION.read_text())
        else:                           # a legacy (cp437) name and the field holding the UTF-8 one
            info = zipfile.ZipInfo("Muller/attention.py")
            utf8 = f"{folder}/attention.py".encode()
            info.extra = struct.pack("<HHBI", 0x7075, 5 + len(utf8), 1, zipfile.crc32(b"Muller/attention.py")) + utf8
            zf.writestr(info, SOLUTION.read_text())
    archive = tmp_path / "upload.zip"
    archive.write_bytes(bytes(without_utf8_flags(bytearray(buffer.getvalue()))))
    found = ex1(archive)
    assert found.source == SOLUTION.read_text() and found.origin == f"{folder}/attention.py", found.origin


# --------------------------------------------------------------------------- sizes and the budget

def test_an_oversized_file_is_refused_from_its_size(tmp_path):
    (tmp_path / "attention.py").write_bytes(b"#" * (intake.MAX_FILE_BYTES + 1))
    found = ex1(tmp_path)
    assert found.kind == "refused" and "larger than 2 MB" in found.problem


def _bomb_zips(folder: Path, count: int = 10, members: int = 40) -> None:
    """Zips of highly compressible members named like a graded file (each ~1.9 MB inflated)."""
    payload = b"#" * (intake.MAX_FILE_BYTES - 1000)
    for n in range(count):
        with zipfile.ZipFile(folder / f"part{n}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
            for m in range(members):
                zf.writestr(f"d{m}/attention.py", payload)
                zf.writestr(f"d{m}/multihead.py", payload)


def test_ten_zips_in_a_folder_stay_within_the_budget(tmp_path):
    _bomb_zips(tmp_path)
    upload = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert upload < 5 * 1024 * 1024            # small upload, ~1.5 GB once inflated
    tracemalloc.start()
    try:
        sub = intake.collect(tmp_path, contract.select("ex1,ex3"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024 * 1024, f"intake peaked at {peak / 2**20:.0f} MB"
    assert sub.found["ex1"].kind == "found"          # one member, within the caps
    assert "several candidates" in sub.found["ex1"].notes[0]


def test_one_budget_for_the_whole_submission(tmp_path):
    (tmp_path / "attention.py").write_text(SOLUTION.read_text())
    (tmp_path / "causal.py").write_text(SOLUTION.read_text())
    budget = intake.ReadAllowance(max_bytes=len(SOLUTION.read_bytes()) + 10)
    sub = intake.collect(tmp_path, contract.select("ex1,ex4"), budget=budget)
    assert sub.found["ex1"].kind == "found"
    assert sub.found["ex4"].kind == "refused" and "in total" in sub.found["ex4"].problem


def test_too_many_entries_stops_the_listing(tmp_path):
    for n in range(30):
        (tmp_path / f"junk{n:02}.txt").write_text("x")
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "attention.py").write_text("x = 1\n")
    found = ex1(tmp_path, budget=intake.ReadAllowance(max_entries=20))
    assert found.kind == "refused" and "more than 20 files" in found.problem


def test_deep_folders_do_not_crash(tmp_path):
    deep = tmp_path
    for _ in range(intake.reading.MAX_DEPTH + 5):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "attention.py").write_text("x = 1\n")
    assert ex1(tmp_path).kind == "missing"


# --------------------------------------------------------------------------- text and notebooks

def test_a_bom_is_tolerated_in_files_and_notebooks(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "attention.py").write_bytes(BOM + SOLUTION.read_bytes())
    found = ex1(tmp_path / "a")
    assert found.source == SOLUTION.read_text() and found.banned == []
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "attention.ipynb").write_bytes(BOM + notebook([code_cell("x = 1\n")]).encode())
    assert ex1(tmp_path / "b").source.strip() == "x = 1"


def test_nbgrader_metadata_of_the_wrong_shape_means_unmarked(tmp_path):
    nb = notebook([code_cell("a = 1\n", nbgrader="solution"), code_cell("b = 2\n", nbgrader=None),
                   {"cell_type": "code", "source": "c = 3\n", "metadata": "odd"}])
    (tmp_path / "attention.ipynb").write_text(nb)
    found = ex1(tmp_path)
    assert found.kind == "found"
    assert [ln for ln in found.source.splitlines() if ln] == ["a = 1", "b = 2", "c = 3"]


@pytest.mark.parametrize("text", [
    json.dumps({"cells": "not a list"}),
    json.dumps({"cells": [code_cell(42)]}),
    json.dumps({"cells": [code_cell(["x = 1\n", 7])]}),
    json.dumps(["a", "list"]),
    "[" * 100_000 + "]" * 100_000,
    "{not json",
], ids=["cells-str", "source-int", "source-mixed-list", "top-level-list", "deep", "garbage"])
def test_a_malformed_notebook_costs_only_its_exercise(tmp_path, text):
    (tmp_path / "causal.ipynb").write_text(text)
    (tmp_path / "attention.py").write_text("x = 1\n")
    sub = intake.collect(tmp_path, contract.select("ex1,ex4"))
    assert sub.found["ex4"].kind == "refused"
    assert "causal.ipynb is not a readable Jupyter notebook" in sub.found["ex4"].problem
    assert sub.found["ex1"].kind == "found"


def test_a_notebooks_saved_outputs_never_count_against_its_limit(tmp_path):
    """Seven saved plots (8.8 MB of outputs) around a small solution: read; a notebook larger
    than the whole submission's budget, or with more code than a .py file may hold: refused."""
    plot = {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(os.urandom(1_000_000)).decode()}}
    cells = [code_cell(SOLUTION.read_text())] + [dict(code_cell(f"plot_{n} = {n}\n"), outputs=[plot])
                                                 for n in range(7)]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "attention.ipynb").write_text(notebook(cells))
    assert (tmp_path / "a" / "attention.ipynb").stat().st_size > 8.8e6         # "8.8 MB"
    found = ex1(tmp_path / "a")
    assert found.kind == "found" and "def scaled_dot_product_attention_np" in found.source
    assert "iVBOR" not in found.source and "image/png" not in found.source
    small = intake.ReadAllowance(max_bytes=4 * 1024 * 1024)
    found = ex1(tmp_path / "a", budget=small)
    assert found.kind == "refused" and "the submission is larger than 4 MB in total" in found.problem
    (tmp_path / "b").mkdir()
    big = "x = 1  # " + "#" * (intake.MAX_FILE_BYTES + 10) + "\n"
    (tmp_path / "b" / "attention.ipynb").write_text(notebook([code_cell(big)]))
    found = ex1(tmp_path / "b")
    assert found.kind == "refused" and "has more than 2 MB of code" in found.problem


# Black breaks a long "…" % args before the operator, on a line of its own inside brackets.
BLACK_CELL = """def describe(weights):
    return (
        "attention weights of shape %s and dtype %s, each row summing to one: %s"
        % (weights.shape, weights.dtype, bool(abs(weights.sum(-1) - 1).max() < 1e-6))
    )
"""
MAGIC_CELLS = ["%matplotlib inline\n!pip install einops\n%load_ext autoreload\n%autoreload 2\n",
               "files = !ls\nsoftmax?\nif True:\n    %time softmax([1.0, 2.0])\n    !echo in a block\n",
               "%%bash\necho a whole cell of shell\nexit 1\n",
               "%%time\ndef timed():\n    return 'defined under %%time'\nraise SystemExit('ignored, as the kit always did')\n",
               "\n%%capture shown --no-stdout\ndef captured():\n    return 'defined under %%capture'\nprint(shown)\n",
               "%%capture\n!pip install einops\nimport einops_is_not_installed_here  # IPython swallows the error\n",
               "%%capture class\n%%time\ndef nested():\n    return 'nested'\ndef broken(:\n",
               "display(softmax(np.zeros((1, 2))))\n"]


def _run_module(source: str, cells: tuple[int, ...] = ()) -> dict:
    """Run a notebook's extracted module the way the worker imports it (with ``cells``: each
    cell on its own, an error ending that cell only); its names."""
    from autograder.sandbox.worker import run_notebook_cells

    names: dict = {"__name__": "attention"}
    code = compile(source, "attention.ipynb", "exec")          # a syntax error anywhere: raised
    if cells:
        run_notebook_cells(source, "attention.ipynb", cells, names)
    else:
        exec(code, names)
    return names


@pytest.fixture(params=["ipython", "without-ipython"])
def cell_reader(request, monkeypatch):
    """Notebooks read with IPython's transformations, and with the fallback (no IPython: a
    student's own check, a machine where it is missing)."""
    if request.param == "ipython":
        pytest.importorskip("IPython")
    else:
        monkeypatch.setattr(intake.notebooks, "_transformer_manager", lambda: None)
    return request.param


def test_black_formatting_and_magics_read_as_jupyter_runs_them(tmp_path, cell_reader):
    cells = [code_cell(SOLUTION.read_text()), code_cell(MAGIC_CELLS[0]), code_cell(BLACK_CELL),
             *map(code_cell, MAGIC_CELLS[1:])]
    (tmp_path / "attention.ipynb").write_text(notebook(cells))
    found = ex1(tmp_path)
    assert found.kind == "found", found.problem
    assert '        % (weights.shape, weights.dtype' in found.source      # kept as written
    names = _run_module(found.source)             # magics and display() inert, %%bash not run
    import numpy as np
    assert "shape (2, 3)" in names["describe"](names["softmax"](np.zeros((2, 3))))
    # %%time and %%capture run their body in the notebook's namespace, as in Jupyter
    assert names["timed"]() == "defined under %%time" and names["captured"]() == "defined under %%capture"
    assert "nested" not in names         # a %%capture body that does not compile: ignored, as IPython does
    lines = found.source.splitlines()    # the cell's blank first line kept, then the header on its line 2
    at = lines.index("shown = _NotebookCapture()  # %%capture: its body runs, as in Jupyter")
    assert lines[at - 1] == "" and lines[at + 1].startswith("try:  # %%capture: an error in its body is ignored")


def test_the_cells_a_student_adds_to_an_nbgrader_notebook_run_and_its_test_cells_do_not(tmp_path):
    """As nbgrader runs them in Jupyter: solution cells, read-only cells and the student's own
    (no nbgrader metadata); never an autograded test cell (the release's: it calls the kit)."""
    def meta(**flags):
        return {"nbgrader": {"grade_id": str(flags), "schema_version": 3, "solution": False,
                             "grade": False, "locked": False, **flags}}
    cells = [code_cell("import numpy as np\n", **meta(locked=True)),
             code_cell("def softmax(x):\n    return _helper(x)\n", **meta(solution=True)),
             code_cell("def _helper(x):\n    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)\n"),
             code_cell("raise SystemExit('a test cell must not run')\n", **meta(grade=True, locked=True)),
             code_cell("scores = np.load('my_scores_on_my_laptop.npy')   # an added cell that fails\n"),
             code_cell("def answer():\n    return 42\n", **meta(solution=True, grade=True))]
    (tmp_path / "attention.ipynb").write_text(notebook(cells))
    found = ex1(tmp_path)
    assert "a test cell must not run" not in found.source
    names = _run_module(found.source, found.cells)     # as nbgrader: an error ends its cell (allow_errors)
    assert names["softmax"](names["np"].zeros(2)).tolist() == [0.5, 0.5] and names["answer"]() == 42
    assert "scores" not in names


def test_a_cell_whose_reading_does_not_compile_is_kept_as_written(tmp_path, cell_reader):
    broken = "%time x = 1\ndef f(:\n    return 2\n"
    (tmp_path / "attention.ipynb").write_text(notebook([code_cell("y = 1\n"), code_cell(broken)]))
    found = ex1(tmp_path)
    assert broken in found.source
    with pytest.raises(SyntaxError):
        compile(found.source, "attention.ipynb", "exec")


@pytest.mark.parametrize("first_line", ["%matplotlib inline", "!pip install -q numpy", "import os"])
def test_a_future_import_after_a_magic_in_the_same_cell_runs_as_in_jupyter(tmp_path, cell_reader, first_line):
    """Jupyter compiles each statement of a cell on its own, so ``%matplotlib inline`` above the
    pasted stub's ``from __future__ import annotations`` runs; so does the notebook here (the
    import moved to the top of the module, parenthesised or not)."""
    solution = SOLUTION.read_text()
    assert "from __future__ import annotations\n" in solution
    cells = [code_cell(f"{first_line}\n{solution}"), code_cell("from __future__ import (division)\n")]
    (tmp_path / "attention.ipynb").write_text(notebook(cells))
    found = ex1(tmp_path)
    assert found.kind == "found", found.problem
    assert found.source.startswith("from __future__ import annotations, division\n")
    import numpy as np
    names = _run_module(found.source, found.cells)
    assert names["softmax"](np.zeros(2)).tolist() == [0.5, 0.5]


def test_magics_never_change_a_notebook_without_them(tmp_path, cell_reader):
    first = "import numpy as np\n\nrate = 100 % 7  # a % that is Python's own\n"
    (tmp_path / "attention.ipynb").write_text(notebook([code_cell(first), code_cell(BLACK_CELL)]))
    found = ex1(tmp_path)
    assert found.source == first + "\n\n" + BLACK_CELL + "\n"


def test_a_notebook_made_to_stall_the_reader_is_read_in_bounded_time(tmp_path):
    """IPython re-reads a cell for each magic it rewrites: 5,000 magics in one 2,000-line cell
    would take minutes; past the budget the cell gets the fallback reading."""
    pytest.importorskip("IPython")
    cell = "x = 1\n" * 2000 + "%time x\n" * 5000
    (tmp_path / "attention.ipynb").write_text(notebook([code_cell(cell), code_cell("%time y = 2\n")]))
    started = time.monotonic()
    found = ex1(tmp_path)
    assert time.monotonic() - started < 20
    assert found.kind == "found"
    _run_module(found.source)
    assert "get_ipython().run_line_magic('time', 'y = 2')" in found.source   # within the budget: IPython's


def test_file_names_in_messages_stay_on_one_line(tmp_path):
    folder = tmp_path / "x\nALL TESTS PASSED\r\x1b[32m"
    folder.mkdir()
    (folder / "attention.py").symlink_to("/etc/hostname")
    found = ex1(tmp_path)
    assert found.kind == "refused"
    assert "\n" not in found.problem and "\r" not in found.problem and "\x1b" not in found.problem
    assert "ALL TESTS PASSED" in found.problem            # shown, escaped, on the same line


def test_the_release_readme_states_every_limit_a_student_can_hit():
    """The limits come from the constants that enforce them; assignments/README.md carries
    them (tests/test_release.py proves it is not stale)."""
    from autograder import jobs
    from autograder.budget import DEFAULT_BUDGET_S
    from autograder.sandbox.limits import SandboxConfig
    text = " ".join((ROOT / "assignments" / "README.md").read_text().split())
    worker = SandboxConfig()
    mb = 1024 * 1024
    for phrase in (f"at most {intake.MAX_FILE_BYTES // mb} MB of code in its code cells",
                   "saved outputs such as plots do not count",
                   f"at most {min(intake.reading.MAX_TOTAL_BYTES, jobs.STAGE_MAX_BYTES) // mb} MB (unzipped)",
                   f"{min(intake.reading.MAX_ENTRIES, jobs.STAGE_MAX_ENTRIES):,} files and folders",
                   f"nested at most {min(intake.reading.MAX_DEPTH, jobs.STAGE_MAX_DEPTH)} deep",
                   f"Importing your file: {worker.load_timeout:g} s",
                   f"Each call into your code: {worker.call_timeout:g} s",
                   f"one exercise together: {DEFAULT_BUDGET_S:g} s",
                   f"Memory: {worker.memory_mb:,} MB", f"first {worker.output_limit // 1024} KB",
                   f"at most {worker.file_size_mb} MB each", f"{worker.max_processes} processes"):
        assert phrase in text, phrase


# --------------------------------------------------------------------------- a missing file explained

@pytest.mark.parametrize("name", ["attention (1).py", "Attention.py", "attention.py.txt", "attention_final.py",
                                  "ATTENTION.ipynb"])
def test_a_near_name_is_named_and_why_it_was_not_taken(tmp_path, name):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / name).write_text(SOLUTION.read_text())
    found = ex1(tmp_path)
    assert found.kind == "missing"
    assert f"found instead: work/{name} (not taken: only a file named exactly attention.py or " \
           "attention.ipynb is graded; rename it)" in found.problem


def test_a_zip_inside_the_zip_is_named(tmp_path):
    inner = tmp_path / "inner.zip"
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("attention.py", SOLUTION.read_text())
    with zipfile.ZipFile(tmp_path / "submission.zip", "w") as archive:
        archive.write(inner, "my work/inner.zip")
    found = ex1(tmp_path / "submission.zip")
    assert found.kind == "missing"
    assert "found instead: my work/inner.zip (not taken: a zip inside a zip is not opened" in found.problem


def test_a_notebook_without_the_stem_is_named(tmp_path):
    (tmp_path / "ex1_attention.ipynb").write_text(notebook([code_cell(SOLUTION.read_text())]))
    (tmp_path / "ex4_causal_mask.ipynb").write_text(notebook([code_cell("x = 1\n")]))   # another exercise's
    (tmp_path / "conftest.py").write_text("")                                            # the release's own
    found = ex1(tmp_path)
    assert found.problem.endswith("found instead: ex1_attention.ipynb (not taken: a notebook is graded only "
                                  "when named exactly attention.ipynb; the release's notebook is not graded, "
                                  "submit attention.py)")


def test_other_python_files_are_named_only_when_nothing_closer_was_found(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "solution.py").write_text(SOLUTION.read_text())
    (tmp_path / "a" / "check.py").write_text("")
    found = ex1(tmp_path / "a")
    assert found.problem.endswith("found instead: solution.py (not taken: only a file named exactly "
                                  "attention.py is graded for ex1)")
    (tmp_path / "a" / "attention (2).py").write_text("")
    assert "solution.py" not in ex1(tmp_path / "a").problem
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "README.md").write_text("nothing here")
    assert ex1(tmp_path / "b").problem == ("attention.py was not found in the submission (expected a file "
                                          "named exactly attention.py or attention.ipynb)")


def test_a_notebooks_syntax_error_is_placed_in_its_cell(tmp_path):
    """A syntax error in a notebook is said by the cell it is in (its first line) and the line
    within that cell, not by the line of the cells joined with the kit's stand-ins, which the
    student never sees: here a hoisted ``__future__`` import and a magic's stand-in come first."""
    from helpers import grade_folder

    cells = [code_cell("from __future__ import annotations\n%matplotlib inline\nimport numpy as np\n"),
             code_cell(SOLUTION.read_text()),
             code_cell("\n# my scratch\nx = 1\ny = (\n")]
    (tmp_path / "attention.ipynb").write_text(notebook(cells))
    found = ex1(tmp_path)
    located = intake.notebooks.cell_line(found.source, found.cells, found.source.splitlines().index("y = (") + 1)
    assert located == intake.notebooks.CellLine(line=4, begins="# my scratch")
    assert intake.notebooks.cell_line(found.source, found.cells, 1) is None       # the kit's own head
    outcome = grade_folder(tmp_path, "ex1")
    (ex1_outcome,) = outcome.exercises
    assert ex1_outcome.status.value == "syntax_error"
    where = "in the code cell that begins `# my scratch`, on its line 4: '(' was never closed"
    assert where in ex1_outcome.message, ex1_outcome.message
    assert outcome.tests and all(where in test.output for test in outcome.tests), outcome.tests[0].output
