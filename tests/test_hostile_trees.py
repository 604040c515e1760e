"""Trees a student controls, graded for real: folders nested far past Python's recursion limit.

* A worker's import makes a folder 3000 deep in the shared ``/tmp`` and 1200 deep in its own
  folder. Before: the user level's sweep (``shutil.rmtree``) raised ``RecursionError`` in the
  zygote, every exercise after the first was lost, and the folder stayed. Now, at every level,
  the next exercise and the next submission graded by the same worker user keep full marks,
  and the folders are gone (the process level, with no worker user, removes the worker's own
  folder; what it writes to the shared ``/tmp`` is its own user's, as the process level says).
* A class folder where one submission holds a folder 1200 deep: ``batch`` grades everyone,
  writes grades.csv and summary.md, and puts the class and output folders' modes back.

Corpus: ``tests/hostile_input/deep_scratch/`` (see its README).
"""
from __future__ import annotations

import csv
import os
import uuid
from pathlib import Path

import pytest

from autograder import batch, contract, filetree
from autograder.batching import resume
from graded_levels import IS_ROOT, LEVELS, grade, open_folder
from helpers import deep_chain
from hostile_cases import render

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "hostile_input"
EX1 = contract.select("ex1")


def solution(ex_id: str) -> str:
    ex = contract.BY_ID[ex_id]
    return (ROOT / "solutions" / ex.folder / ex.filename).read_text()


@pytest.fixture
def place():
    """An open folder in /var/tmp for the submission, results and the worker's proof files,
    removed afterwards with the kit's remover."""
    folder = open_folder("ag-trees-")
    yield folder
    filetree.remove(folder)


def deep_attack(name: str, proof: Path) -> str:
    text = render((CORPUS / "deep_scratch" / "attention.py").read_text(), "trees", "unused")
    return (text.replace("@NAME@", name).replace("@PROOF@", str(proof))
            .replace("@DEPTH_TMP@", "3000").replace("@DEPTH_HOME@", "1200"))


@pytest.mark.parametrize("level", LEVELS)
def test_a_folder_3000_deep_costs_no_one_anything(level, place, monkeypatch):
    name = f"ag-deep-{uuid.uuid4().hex[:8]}"
    proof = place / "proof"
    proof.mkdir(mode=0o777)
    proof.chmod(0o1777)
    monkeypatch.setenv("AUTOGRADER_SANDBOX_SHARE", str(proof))     # namespaces: the worker sees it
    sub = place / "attacker"
    sub.mkdir()
    (sub / "attention.py").write_text(deep_attack(name, proof))
    (sub / "causal.py").write_text(solution("ex4"))
    try:
        run = grade(level, sub, "ex1,ex4", place / "out-attacker")
        homes = [Path(p.read_text()) for p in proof.glob("home-*")]
        assert homes, "the attack never ran: the case proves nothing"
        assert run.full("ex1"), run.outputs("ex1")[:2000]
        assert run.full("ex4"), "the exercise after the attack lost points: " + run.outputs("ex4")[:2000]
        assert not [h for h in homes if os.path.lexists(h)], f"the worker's folder stayed: {homes}"
        if level != "process":
            assert not os.path.lexists(f"/tmp/{name}"), "the worker user's folder in /tmp stayed"
        honest = place / "honest"
        honest.mkdir()
        (honest / "attention.py").write_text(solution("ex1"))
        again = grade(level, honest, "ex1", place / "out-honest")
        assert again.full("ex1"), "the next submission of this worker user lost points"
        assert "RecursionError" not in run.stderr + again.stderr
    finally:
        filetree.remove(f"/tmp/{name}")          # the process level's own user's file


# --------------------------------------------------------------------------- batch

def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


@pytest.fixture
def deep_class(place):
    """alice and bob (correct), deep (correct, next to a folder 1200 deep), the class and output
    folders open to everyone (so that the user level's KeptModes closes them)."""
    subs = place / "class"
    for student in ("alice", "deep", "bob"):
        (subs / student).mkdir(parents=True)
        (subs / student / "attention.py").write_text(solution("ex1"))
    deep_chain(subs / "deep" / "data", 1200)
    out = place / "out"
    out.mkdir()
    for folder in (subs, out):
        folder.chmod(0o755)
    return subs, out


def test_batch_grades_a_class_with_a_folder_1200_deep(deep_class):
    subs, out = deep_class
    rows, _ = batch.run_batch(subs, out / "grades.csv", EX1, jobs=1, progress=False)
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        table = {r["student"]: r for r in csv.DictReader(handle)}
    assert sorted(table) == ["alice", "bob", "deep"]
    assert all(r["status"] == "ok" and r["total"] == "20" for r in table.values()), table
    assert (out / "summary.md").is_file()
    assert _mode(subs) == _mode(out) == 0o755, "the class or output folder kept the batch's mode"
    assert resume.submission_digest(subs / "deep") is not None


@pytest.mark.skipif(not IS_ROOT, reason="folders are closed only as root")
def test_batch_puts_the_modes_back_whatever_fails(deep_class, monkeypatch):
    subs, out = deep_class
    seen = {}

    def broken(*args, **kwargs):
        seen["modes"] = (_mode(subs), _mode(out))
        raise RuntimeError("something nobody foresaw")
    monkeypatch.setattr(resume, "split", broken)
    with pytest.raises(RuntimeError, match="nobody foresaw"):
        batch.run_batch(subs, out / "grades.csv", EX1, jobs=1, progress=False, warm=False)
    assert seen["modes"] == (0o700, 0o700), "the case proves nothing: the folders were never closed"
    assert _mode(subs) == _mode(out) == 0o755
