"""Time budgeted per exercise; a hanging function is not waited for again.

Scaled-down versions of the issue's rows (short call limits and budgets, so they run fast):

* "ex1-4 correct, each ex5 call taking 15 s (under the 20 s per-call limit): 0/100" ->
  ex1 correct and every ex3 call slow but under the call limit: ex1 keeps full marks, ex3
  is ``out_of_time`` with partial credit at most, its late tests say the budget is used up.
* "one honestly hanging forward costs 13 x 20 s" -> one timeout, then fast failures.
* results are written as each exercise finishes: a grader stopped during ex3 leaves a
  results.json with ex1's score.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from autograder import results
from autograder.budget import Budgets, BudgetSpent, call_key
from autograder.sandbox import protocol
from helpers import grade_cli, grade_command, grader_env, solution, stub_source, write_submission

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker user (root)")

SLOW_EVERY_CALL = '''

# --- every public function and method takes SECONDS longer (but stays under the call limit)
import functools as _functools
import time as _time


def _slow(fn):
    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _time.sleep(@SECONDS@)
        return fn(*args, **kwargs)
    return wrapper


split_heads = _slow(split_heads)
combine_heads = _slow(combine_heads)
MultiHeadAttention.forward = _slow(MultiHeadAttention.forward)
'''

# A hang that sleeps: the grader's clocks are wall clocks, so it is as stuck as a busy loop,
# without spending a core for its 25 s in the batch test (the hostile corpus's
# infinite_loop_* cases are the busy loops).
HANGING_FORWARD = '''

# --- forward never returns
def _hang(self, *args, **kwargs):
    import time
    while True:
        time.sleep(0.05)


MultiHeadAttention.forward = _hang
'''


def test_budget_unit_rules():
    budgets = Budgets({"ex5": 0.0}, default=100.0)
    budgets.enter("ex1")
    budgets.check()                                     # plenty left: no exception
    budgets.enter("ex5")
    with pytest.raises(BudgetSpent, match=r"time budget for ex5 \(0 s"):
        budgets.check()
    assert budgets.out_of_time("ex5") and not budgets.out_of_time("ex1")


def test_call_keys_name_the_function():
    softmax = protocol.Ref.module("attention").attr("softmax")
    call = protocol.Call(softmax)
    assert call_key(call) == (("module", "attention.softmax"), "attention.softmax")
    on_object = protocol.Call(protocol.Ref("o7", (), "MultiHeadAttention"))
    key, label = call_key(on_object)
    assert "MultiHeadAttention" in label and key == ("object", label)
    # the kit's helper on plain data is not keyed; given a student function it is
    grads = protocol.Ref.support().attr("autograd").attr("grads")
    assert call_key(protocol.Call(grads, {"L": [1]})) == (None, "")
    given = protocol.Call(grads, {"L": [softmax.to_json()]}, refs=(softmax,))
    assert call_key(given)[0] == ("support", "support.autograd.grads", ("attention.softmax",))
    assert call_key(protocol.GetAttr(softmax)) == (None, "")


def test_slow_exercise_runs_out_of_its_budget_only(tmp_path):
    """Every ex3 call sleeps 0.6 s (call limit 5 s): ex3's 4 s budget runs out, ex1 stays full."""
    slow = solution("ex3") + SLOW_EVERY_CALL.replace("@SECONDS@", "0.6")
    folder = write_submission(tmp_path / "sub", {"attention.py": solution("ex1"), "multihead.py": slow})
    run = grade_cli(folder, tmp_path, "--exercises", "ex1,ex3", "--timeout", "5", "--budget", "ex3=4")
    fates = run.fates
    assert (fates["ex1"].status, fates["ex1"].score, fates["ex1"].max_score) == ("graded", 20.0, 20.0)
    assert fates["ex3"].status == results.ExerciseStatus.OUT_OF_TIME
    assert fates["ex3"].score < fates["ex3"].max_score == 20.0
    assert "time budget for ex3 (4 s)" in fates["ex3"].message
    late = [o for o in run.outputs("ex3") if "time budget for ex3 (4 s" in o]
    assert late, run.outputs("ex3")
    assert fates["ex3"].tests_total == len(run.tests("ex3")) > len(late)
    assert "[out of time]" in run.data["output"]
    assert run.data["score"] == 20.0 + fates["ex3"].score


def test_hanging_forward_is_waited_for_once(tmp_path):
    """forward loops forever: the first call times out (1 s), later calls of forward on any
    MultiHeadAttention fail at once, naming the earlier timeout; split/combine still pass."""
    folder = write_submission(tmp_path / "sub", {"multihead.py": solution("ex3") + HANGING_FORWARD})
    run = grade_cli(folder, tmp_path, "--exercises", "ex3", "--timeout", "1", "--exercise-budget", "120")
    outputs = run.outputs("ex3")
    timed_out = [o for o in outputs if "did not finish within 1 s" in o]
    not_again = [o for o in outputs if "did not finish in an earlier test" in o]
    # one per distinct way of calling forward: directly, and through each kind of support
    # probe (modules' gradients, probes' inputs-of-each-kind and meta-device calls)
    assert 1 <= len(timed_out) <= 6, timed_out
    assert len(not_again) >= 5, outputs
    assert any("MultiHeadAttention" in o for o in not_again)
    fate = run.fates["ex3"]
    assert fate.status == results.ExerciseStatus.GRADED and 0 < fate.score < 20


def test_results_written_as_each_exercise_finishes(tmp_path):
    """A grader stopped while ex3 hangs leaves results.json with ex1's full score."""
    folder = write_submission(tmp_path / "sub", {"attention.py": solution("ex1"),
                                                 "multihead.py": solution("ex3") + HANGING_FORWARD})
    results_path = tmp_path / "results.json"
    proc = subprocess.Popen(grade_command(folder, results_path, "--exercises", "ex1,ex3", "--timeout", "60"),
                            cwd=tmp_path, env=grader_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    data = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                data = json.loads(results_path.read_text())
            except (OSError, ValueError):
                data = None
            if data and results.outcomes_from_json(data).get("ex1"):
                break
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGINT)              # as batch's --student-timeout does first
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    data = json.loads(results_path.read_text())
    results.validate(data)
    assert data["extra_data"]["complete"] is False
    fates = results.outcomes_from_json(data)
    assert set(fates) == {"ex1"} and fates["ex1"].score == 20.0
    assert data["score"] == 20.0
    assert {results.exercise_of_result(t) for t in data["tests"]} == {"ex1"}
    assert "still under way" in data["output"]


def test_stub_is_not_slowed_by_budgets(tmp_path):
    """Budgets never turn a quick run into failures: the stub scores 0 with no budget message."""
    folder = write_submission(tmp_path / "sub", {"attention.py": stub_source()})
    run = grade_cli(folder, tmp_path, "--exercises", "ex1", "--exercise-budget", "60")
    assert run.data["score"] == 0.0
    assert run.fates["ex1"].status == results.ExerciseStatus.GRADED
    assert not any("time budget" in o for o in run.outputs("ex1"))


def test_batch_timeout_keeps_finished_exercises(tmp_path, monkeypatch):
    """batch's --student-timeout stops a grader stuck in ex3: the row keeps ex1's 20 points."""
    from autograder import batch, contract

    subs = tmp_path / "class"
    write_submission(subs / "ann", {"attention.py": solution("ex1"),
                                    "multihead.py": solution("ex3") + HANGING_FORWARD})
    out = tmp_path / "out" / "grades.csv"
    rows, _ = batch.run_batch(subs, out, contract.select("ex1,ex3"), jobs=1, call_timeout=60,
                              student_timeout=25, progress=False)
    (row,) = rows
    assert row.status == "timeout"
    assert (row.scores["ex1"], row.scores["ex3"], row.total) == (20.0, 0.0, 20.0)
    assert "exercises graded before it stopped: ex1" in row.reason
    data = json.loads((out.parent / "results" / "ann" / "results.json").read_text())
    assert data["score"] == 20.0 and data["extra_data"]["complete"] is False
