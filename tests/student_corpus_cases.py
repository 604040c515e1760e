"""The blind student corpus: which submissions it holds and what verdict each must get.

    tests/student_corpus/correct/<style>/   five complete, correct files in one honest style
    tests/student_corpus/bugs/<case>/       the five files with ONE bug, and BUG.txt whose first
                                            line is "<exercise> <function> : <what is wrong>"

Correct styles keep full marks on every exercise; every bug loses points on a test of its
exercise that is about the function holding it (:func:`problem_of`). Used by
``tests/test_student_corpus.py`` and ``bench/seed_sweep.py --kinds student``.
"""
from __future__ import annotations

import re
from pathlib import Path

from autograder import contract
from autograder.records import NOTE_PREFIX
from suite_covers import covers_by_result_name

CORPUS = Path(__file__).resolve().parent / "student_corpus"
# case -> the rule it breaks, which the students' docstrings state and the contract does not
BEYOND_CONTRACT = {
    "ex2_plt_show": "plot_attention_heads calls plt.show()",
    "ex2_title_default_when_none": "plot_attention sets a default title when title is None",
    "ex4_greedy_dtype_promoted": "greedy_generate returns int64 for an int32 prompt (the contract's prompt is a LongTensor)",
    "ex4_greedy_returns_prompt_itself": "greedy_generate returns the prompt itself for max_new_tokens = 0",
    "ex4_greedy_without_no_grad": "greedy_generate runs the model with gradients enabled",
    "ex5_path_case_insensitive": "path_length accepts 'LSTM' (the contract defines only 'lstm' and 'attention')",
}


def folders(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).iterdir() if p.is_dir())


def bug_of(folder: Path) -> tuple[str, str, str]:
    """(exercise, function, description) from BUG.txt."""
    line = (folder / "BUG.txt").read_text(encoding="utf-8").strip().splitlines()[0]
    head, _, description = line.partition(" : ")
    exercise, function = head.split(maxsplit=1)
    return exercise, function.strip(), description.strip()


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
    (tests/test_student_corpus.py, ``bench/seed_sweep.py --kinds student``). A bug that breaks
    only a rule beyond the contract (:data:`BEYOND_CONTRACT`) must lose nothing and fail a
    0-point note about its function instead."""
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


def wrong_hint(folder: Path, results) -> str:
    """What is wrong with a bug's hints ("" when none is): a failing test names likely causes
    none of which is in the bug's label (labels.toml). ``test_bug_gets_no_wrong_hint`` and
    ``bench/seed_sweep.py`` (under every secret) hold the corpus to it."""
    from hints import STUDENT_LABELS, folder_labels, wrong_ones
    label = folder_labels(STUDENT_LABELS)[folder.name]
    wrong = wrong_ones(label, [list(t.cause) for t in results.tests if not t.passed])
    return f"{folder.name}: label {sorted(label.causes) or label.why}, but tests named {wrong}" if wrong else ""
