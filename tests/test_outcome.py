"""Each exercise's fate is data (results.json ``extra_data``), read by
``grade``'s summary, ``batch``, ``check`` and the interop adapter, never re-parsed from prose."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder import check, contract, intake, results
from autograder.batching.discovery import Entry
from autograder.diagnosis import causes
from autograder.suites.ex1_attention.causes import Ex1Cause
from autograder.batching.runner import Row, Runner
from autograder.interop import adapter
from helpers import grade_cli, solution, write_submission

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker user (root)")

OS_EXIT_IN_SOFTMAX = '''

import os as _os


def softmax(x, axis=-1):
    _os._exit(3)
'''


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """ex1 correct, ex2 missing, ex3 a syntax error, ex4 raises at import, ex5 a symlink."""
    tmp = tmp_path_factory.mktemp("mixed")
    folder = write_submission(tmp / "sub", {
        "attention.py": solution("ex1"),
        "multihead.py": "import torch\n\ndef split_heads(x, h:\n    return x\n",
        "causal.py": "import torch\nraise RuntimeError('my module is not ready')\n",
    })
    os.symlink(Path(__file__).resolve().parents[1] / "reference" / "lstm_vs_attention.py",
               folder / "lstm_vs_attention.py")
    return folder, grade_cli(folder, tmp)


def test_every_status_is_data(mixed):
    _, run = mixed
    fates = run.fates
    assert {ex: f.status for ex, f in fates.items()} == {
        "ex1": "graded", "ex2": "missing", "ex3": "syntax_error", "ex4": "import_error", "ex5": "refused"}
    assert (fates["ex1"].score, fates["ex1"].max_score) == (20.0, 20.0)
    assert fates["ex1"].tests_passed == fates["ex1"].tests_total == len(run.tests("ex1")) > 0
    assert fates["ex1"].origin == "attention.py" and fates["ex1"].message == ""
    for ex_id in ("ex2", "ex3", "ex4", "ex5"):
        assert fates[ex_id].score == 0.0 and fates[ex_id].max_score == 20.0
        assert fates[ex_id].tests_passed == 0 and fates[ex_id].tests_total == len(run.tests(ex_id))
    assert "visualize.py was not found" in fates["ex2"].message
    assert "syntax error on line 3" in fates["ex3"].message
    assert "RuntimeError: my module is not ready" in fates["ex4"].message
    assert "symbolic link" in fates["ex5"].message
    assert run.data["extra_data"]["complete"] is True


def test_each_test_of_an_unusable_exercise_says_why(mixed):
    """Every test of an exercise whose file is unusable fails with that reason, never with what
    the test would have made of the missing module (a missing ex3 once read "raised
    ExerciseUnavailable, expected ValueError", a missing ex2 "support.modules.new_axes raised
    AttributeError")."""
    _, run = mixed
    for ex_id in ("ex2", "ex3", "ex4", "ex5"):
        reason = run.fates[ex_id].message
        wrong = [t["name"] for t in run.tests(ex_id) if reason not in t["output"]]
        assert reason and not wrong, (ex_id, reason[:80], wrong[:3])


def test_isolation_in_results_and_summary(mixed):
    _, run = mixed
    level = run.data["extra_data"]["isolation"]
    assert level in ("namespaces", "user", "process")
    lines = run.data["output"].splitlines()
    assert sum(line.startswith(f"Isolation: {level} — ") for line in lines) == 1
    assert "[syntax error]" in run.data["output"] and "[refused]" in run.data["output"]


def test_batch_row_reads_the_structure(mixed, tmp_path):
    """batch's reason comes from the statuses: renaming the messages changes nothing."""
    folder, run = mixed
    data = dict(run.data, output="(no summary)",
                tests=[dict(t, output="") for t in run.data["tests"]])
    path = tmp_path / "results.json"
    results.write_atomic(path, data)
    with Runner(tmp_path, contract.DEFAULT) as runner:
        row = runner._read(Row(entry=Entry("ada", "ada", folder)), path, 0, b"")
    assert row.status == "ok"
    assert row.scores == {"ex1": 20.0, "ex2": 0.0, "ex3": 0.0, "ex4": 0.0, "ex5": 0.0}
    assert row.reason == ("not found: ex2; syntax error: ex3; could not be imported: ex4; refused: ex5")


def test_batch_no_files_from_the_structure(tmp_path):
    folder = write_submission(tmp_path / "sub", {"notes.txt": "nothing here"})
    run = grade_cli(folder, tmp_path, "--exercises", "ex1,ex2")
    path = tmp_path / "again.json"
    results.write_atomic(path, run.data)
    with Runner(tmp_path, contract.select("ex1,ex2")) as runner:
        row = runner._read(Row(entry=Entry("bo", "bo", folder)), path, 0, b"")
    assert row.status == "no files" and row.total == 0.0


def test_check_reads_the_structure(mixed):
    folder, run = mixed
    outcome = results.Results(exercises=list(run.fates.values()))
    submission = intake.collect(folder)
    for ex_id, expected in (("ex1", None), ("ex3", "syntax error on line 3"), ("ex5", "symbolic link")):
        ex = contract.BY_ID[ex_id]
        problem = check._load_problem(outcome, ex, submission.found[ex_id])
        assert (problem is None) if expected is None else (expected in problem)


def test_crashing_worker_is_crashed(tmp_path):
    """softmax ends its own process each call: the exercise is "crashed", not merely failed."""
    folder = write_submission(tmp_path / "sub", {"attention.py": solution("ex1") + OS_EXIT_IN_SOFTMAX})
    run = grade_cli(folder, tmp_path, "--exercises", "ex1", "--timeout", "5")
    fate = run.fates["ex1"]
    assert fate.status == results.ExerciseStatus.CRASHED and fate.score < 20.0
    assert "died" in fate.message


def test_adapter_outcomes():
    fate = adapter.exercise_outcome("ex1", None)
    assert (fate.status, fate.score, fate.max_score) == ("missing", 0.0, 20.0)
    fate = adapter.exercise_outcome("ex1", "def softmax(:\n")
    assert fate.status == "syntax_error"
    fate = adapter.exercise_outcome("ex1", solution("ex1"), "attention.py")
    assert (fate.status, fate.score) == ("graded", 20.0)


def test_outcome_json_round_trip_is_tolerant():
    fate = results.ExerciseOutcome("ex1", "graded", "", 12.5, 20.0, 3.25, 10, 6, "a.py")
    assert results.ExerciseOutcome.from_json(fate.to_json()) == fate
    odd = results.ExerciseOutcome.from_json({"exercise": "ex2", "score": "lots", "tests_total": True})
    assert (odd.exercise, odd.status, odd.score, odd.tests_total) == ("ex2", "graded", 0.0, 0)
    assert results.outcomes_from_json({"extra_data": {"exercises": "nope"}}) == {}
    assert results.outcomes_from_json({}) == {}


def test_each_failure_names_its_cause_as_data(tmp_path):
    """The likely cause is a field of the test's result (``extra_data.cause``: the ids of its
    causes), whose sentences are the message's ``Likely cause:`` text; tests without one have
    neither."""
    source = solution("ex1").replace("scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)",
                                     "scores = Q @ K.transpose(-2, -1)")
    assert source != solution("ex1")
    run = grade_cli(write_submission(tmp_path / "sub", {"attention.py": source}), tmp_path, "--exercises", "ex1")
    failed = [t for t in run.data["tests"] if t["status"] == "failed"]
    assert failed
    named = 0
    for t in failed:
        text = t["output"].split("\nLikely cause: ", 1)[1] if "\nLikely cause: " in t["output"] else None
        ids = (t.get("extra_data") or {}).get("cause")
        assert (text is None) == (ids is None), (t["name"], t["output"], ids)
        if ids:
            assert text == "\n  or: ".join(causes.of_id(i).sentence for i in ids), (t["name"], t["output"], ids)
        named += bool(ids)
    assert named and any("ex1.no_scale" in (t.get("extra_data") or {}).get("cause", []) for t in failed)
    # grade's terminal summary shows each failure's likely cause in full
    assert "\n      Likely cause: " + Ex1Cause.NO_SCALE.sentence + "\n" in run.stdout, run.stdout[-3000:]
    assert all("extra_data" not in t for t in run.data["tests"] if t["status"] == "passed")
