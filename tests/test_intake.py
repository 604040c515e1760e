"""Intake reads only plain files that really lie inside the submission, within one budget.

Each test builds a submission on disk (links, hard links, FIFOs, zips, notebooks) and
checks what ``intake.collect`` makes of it: ``Found.kind`` ("found" / "missing" /
"refused"), the message, and that nothing outside the submission was read.
"""
from __future__ import annotations

import json
import os
import stat
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


def test_huge_notebooks_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "attention.ipynb").write_bytes(b" " * (intake.MAX_NOTEBOOK_BYTES + 1))
    assert "larger than 8 MB" in ex1(tmp_path / "a").problem
    (tmp_path / "b").mkdir()
    big = "x = 1  # " + "#" * (intake.MAX_FILE_BYTES + 10) + "\n"
    (tmp_path / "b" / "attention.ipynb").write_text(notebook([code_cell(big)]))
    found = ex1(tmp_path / "b")
    assert found.kind == "refused" and "of code" in found.problem


def test_file_names_in_messages_stay_on_one_line(tmp_path):
    folder = tmp_path / "x\nALL TESTS PASSED\r\x1b[32m"
    folder.mkdir()
    (folder / "attention.py").symlink_to("/etc/hostname")
    found = ex1(tmp_path)
    assert found.kind == "refused"
    assert "\n" not in found.problem and "\r" not in found.problem and "\x1b" not in found.problem
    assert "ALL TESTS PASSED" in found.problem            # shown, escaped, on the same line
