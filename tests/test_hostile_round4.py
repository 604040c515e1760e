"""Hostile input, round 4, graded for real through the CLI (trees: tests/test_hostile_trees.py).

* the student's torch / NumPy / Python globals never reach the kit: ex4's solution with every
  global setting changed at import keeps full marks, at every level;
* notebooks read as Jupyter runs them: a correct notebook formatted by Black (a ``% args`` line
  of its own inside brackets) and one with 8.8 MB of saved plots keep full marks, with IPython
  (the kit's Python) and without it (the outside Python of the user level has none);
* a missing file is explained in the results students see.

Corpus: ``tests/hostile_input/torch_globals/`` (see its README).
"""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from autograder import contract, filetree
from graded_levels import IS_ROOT, LEVELS, grade, open_folder

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "hostile_input"


def solution(ex_id: str) -> str:
    ex = contract.BY_ID[ex_id]
    return (ROOT / "solutions" / ex.folder / ex.filename).read_text()


@pytest.fixture
def place():
    folder = open_folder("ag-round4-")
    yield folder
    filetree.remove(folder)


# --------------------------------------------------------------------------- torch's globals

@pytest.mark.parametrize("level", LEVELS)
def test_the_students_torch_globals_never_reach_the_kit(level, place):
    sub = place / "submission"
    sub.mkdir()
    (sub / "causal.py").write_text(solution("ex4") + "\n\n"
                                   + (CORPUS / "torch_globals" / "at_import.py").read_text())
    run = grade(level, sub, "ex4", place / "out", timeout=20.0)
    failed = [t["name"] for t in run.tests("ex4") if t["status"] != "passed"]
    assert run.full("ex4"), f"{failed}: {run.outputs('ex4')[:3000]}"


# --------------------------------------------------------------------------- notebooks

BLACK_HELPER = '''def describe_generation(prompt, generated):
    return (
        "generated %d tokens after a prompt of %d (batch of %d): %s"
        % (generated.shape[1] - prompt.shape[1], prompt.shape[1], prompt.shape[0], generated.tolist())
    )
'''


def _cell(source: str, outputs: list | None = None) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": outputs or [],
            "source": source.splitlines(keepends=True)}


def _notebook(cells: list[dict]) -> str:
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5})


def black_notebook() -> str:
    """ex1's solution as a notebook: magics, shell lines, and a Black-formatted helper."""
    return _notebook([_cell("%matplotlib inline\n%load_ext autoreload\n%autoreload 2\n!pip install numpy\n"),
                      _cell(solution("ex1")), _cell(BLACK_HELPER),
                      _cell("import numpy as np\nout, w = scaled_dot_product_attention_np(*[np.eye(3)] * 3)\n"
                            "%time softmax(np.zeros(3))\nw.sum?\n")])


def plotted_notebook() -> str:
    """ex4's solution as a notebook with seven saved plots: 8.8 MB on disk, 30 KB of code."""
    plot = {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(os.urandom(950_000)).decode(), "text/plain": ["<Figure>"]}}
    return _notebook([_cell(solution("ex4")), _cell("import matplotlib.pyplot as plt\n")]
                     + [_cell(f"plt.plot(range({n}))\n", [plot]) for n in range(7)])


@pytest.mark.parametrize("level", LEVELS)
def test_correct_notebooks_keep_full_marks(level, place):
    sub = place / "submission"
    sub.mkdir()
    (sub / "attention.ipynb").write_text(black_notebook())
    (sub / "causal.ipynb").write_text(plotted_notebook())
    assert (sub / "causal.ipynb").stat().st_size > 8.8e6
    run = grade(level, sub, "ex1,ex4", place / "out")
    assert run.full("ex1"), run.outputs("ex1")[:3000]
    assert run.full("ex4"), run.outputs("ex4")[:3000]


# --------------------------------------------------------------------------- a missing file explained

@pytest.mark.skipif(not IS_ROOT, reason="graded at the namespaces level (root)")
def test_a_missing_file_is_explained_to_the_student(place):
    sub = place / "submission"
    sub.mkdir()
    (sub / "attention (1).py").write_text(solution("ex1"))
    (sub / "ex4_causal_mask.ipynb").write_text(_notebook([_cell(solution("ex4"))]))
    run = grade("namespaces", sub, "ex1,ex4", place / "out")
    assert run.score("ex1") == run.score("ex4") == 0
    assert ("found instead: attention (1).py (not taken: only a file named exactly attention.py or "
            "attention.ipynb is graded; rename it)") in run.outputs("ex1")
    assert ("found instead: ex4_causal_mask.ipynb (not taken: a notebook is graded only when named "
            "exactly causal.ipynb") in run.outputs("ex4")
