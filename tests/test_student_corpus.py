"""The blind student corpus (issue 21 item 4): submissions written by someone who read only
the student release (``dist/release.zip``), never the kit, kept as written (never tuned
after the fact: a bug the suites miss is a missing test, not a case to edit).

    tests/student_corpus/correct/<style>/   five complete, correct files in one honest style
    tests/student_corpus/bugs/<case>/       the five files with ONE bug, and BUG.txt:
                                            "<exercise> <function> : <what is wrong>"

Correct styles keep full marks on every exercise; every bug loses points on a test of its
exercise that is about the function holding it; at least NAMED_SHARE of the bugs get a
named likely mistake. ``bench/grade_corpus.py`` prints the same table for notes.

A few "bugs" break a rule that only the release's docstrings state, not the published
contract (``BEYOND_CONTRACT``): every point a student can lose traces to a sentence of the
contract, so these keep full marks, and a 0-point note about their function fails (the
feedback still reaches the student).
"""
from __future__ import annotations

import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from autograder import contract
from autograder.records import NOTE_PREFIX
from kit import grade_folder
from suite_covers import covers_by_result_name

CORPUS = Path(__file__).resolve().parent / "student_corpus"
NAMED = "Likely cause:"
NAMED_SHARE = 0.90                 # issue 21: nine bugs in ten get a named mistake
# case -> the rule it breaks, which the students' docstrings state and the contract does not
BEYOND_CONTRACT = {
    "ex2_plt_show": "plot_attention_heads calls plt.show()",
    "ex2_title_default_when_none": "plot_attention sets a default title when title is None",
    "ex4_greedy_dtype_promoted": "greedy_generate returns int64 for an int32 prompt (the contract's prompt is a LongTensor)",
    "ex4_greedy_returns_prompt_itself": "greedy_generate returns the prompt itself for max_new_tokens = 0",
    "ex4_greedy_without_no_grad": "greedy_generate runs the model with gradients enabled",
    "ex5_path_case_insensitive": "path_length accepts 'LSTM' (the contract defines only 'lstm' and 'attention')",
}


def _folders(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).iterdir() if p.is_dir())


def bug_of(folder: Path) -> tuple[str, str, str]:
    """(exercise, function, description) from BUG.txt."""
    line = (folder / "BUG.txt").read_text(encoding="utf-8").strip()
    head, _, description = line.partition(" : ")
    exercise, function = head.split(maxsplit=1)
    return exercise, function.strip(), description.strip()


def grade_copy(folder: Path, exercises: str):
    """Grade a copy of a corpus submission (the corpus stays as written) under the current
    seed secret (``bench/seed_sweep.py`` sets another one)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "submission"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("BUG.txt"))
        return grade_folder(copy, exercises)


_graded = lru_cache(maxsize=None)(grade_copy)       # the tests below share one grading each


def exercises_of(folder: Path) -> str:
    """The exercises a corpus submission is graded on: every exercise whose file a correct
    style holds, the bug's own for a bug."""
    if folder.parent.name != "correct":
        return bug_of(folder)[0]
    return ",".join(ex.id for ex in contract.EXERCISES if (folder / ex.filename).is_file())


def _names(function: str) -> set[str]:
    """``MultiHeadAttention.forward`` -> {"MultiHeadAttention.forward", "MultiHeadAttention", "forward"}."""
    parts = function.split(".")
    return {function, *parts}


def problem_of(folder: Path, results) -> str:
    """What is wrong with how a corpus submission was graded; "" when its verdict holds
    (also used by ``bench/seed_sweep.py --kinds student``)."""
    failed = [t for t in results.tests if not t.passed]
    lost = [t for t in failed if t.score < t.max_score]
    if folder.parent.name == "correct":
        total = sum(contract.BY_ID[ex].points for ex in exercises_of(folder).split(","))
        if results.score == results.max_score == total:
            return ""
        return f"{folder.name}, a correct style, lost points: {[(t.name, t.output[:300]) for t in lost]}"
    exercise, function, description = bug_of(folder)
    covers = covers_by_result_name()
    names = _names(function)

    def about(tests) -> list[str]:
        return [t.name for t in tests
                if names & {c.split(":")[0] for c in covers.get(t.name, set())}
                or any(re.search(rf"\b{re.escape(n)}\b", t.name) for n in names)]

    if folder.name in BEYOND_CONTRACT:
        if lost:
            return (f"{folder.name} breaks a rule the contract does not make ({BEYOND_CONTRACT[folder.name]}) "
                    f"but lost points: {[(t.name, t.output[:300]) for t in lost]}")
        if not about([t for t in failed if NOTE_PREFIX in t.name]):
            return f"{folder.name}: no 0-point note about {function} failed: {[t.name for t in failed]}"
        return ""
    if not lost:
        return f"{folder.name} ({description}) kept full marks: a missing hidden test"
    if not about(lost):
        return f"{folder.name}: the bug is in {function} but no failing test is about it: {[t.name for t in failed]}"
    return ""


@pytest.mark.parametrize("folder", _folders("correct"), ids=lambda p: p.name)
def test_correct_style_keeps_full_marks(folder: Path):
    problem = problem_of(folder, _graded(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", [f for f in _folders("bugs") if f.name not in BEYOND_CONTRACT], ids=lambda p: p.name)
def test_bug_loses_points_on_its_function(folder: Path):
    problem = problem_of(folder, _graded(folder, exercises_of(folder)))
    assert not problem, problem


@pytest.mark.parametrize("folder", [f for f in _folders("bugs") if f.name in BEYOND_CONTRACT], ids=lambda p: p.name)
def test_a_rule_beyond_the_contract_costs_nothing_and_gets_a_note(folder: Path):
    problem = problem_of(folder, _graded(folder, exercises_of(folder)))
    assert not problem, problem


def test_the_bugs_beyond_the_contract_are_in_the_corpus():
    assert set(BEYOND_CONTRACT) <= {f.name for f in _folders("bugs")}


def test_most_bugs_get_a_named_mistake():
    folders = _folders("bugs")
    unnamed = [f.name for f in folders
               if not any(NAMED in t.output for t in _graded(f, bug_of(f)[0]).tests if not t.passed)]
    share = 1 - len(unnamed) / len(folders)
    assert share >= NAMED_SHARE, f"named mistakes for {share:.0%} of {len(folders)} bugs; unnamed: {unnamed}"
