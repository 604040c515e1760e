"""Each exercise in a worker of its own; time charged to the code
that spent it; reach-ins into the kit reported to course staff.

* A student file of one exercise cannot see, let alone forge, another exercise's probes: the
  worker that grades ex1 never imported ``visualize.py`` (the issue's attack rewrote the
  support snapshot from ``visualize.py`` so that an in-place ``attention.py`` kept its marks).
* A slow exercise that runs out of its budget costs that exercise only: the next exercise's
  worker imports its own file outside its budget (the issue: a restart during ex2 re-imported
  all five files inside ex2's budget, and a correct ex2 scored 0 "out_of_time").
* A student file that walks the garbage collector or takes frames is named in the log and
  in ``extra_data.reach_ins`` (never in the student's own output).
"""
from __future__ import annotations

import os

import pytest

from helpers import grade_cli, solution, worker_user, write_submission

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker user (root)")

OWN_USER = ("--worker-user", worker_user("perex"))
FILES = {ex: f"{name}.py" for ex, name in
         [("ex1", "attention"), ("ex2", "visualize"), ("ex3", "multihead"), ("ex4", "causal"),
          ("ex5", "lstm_vs_attention")]}

# ex1 with one bug: the forward pass zeroes its Q argument after computing the (correct) result
IN_PLACE_EX1 = solution("ex1") + '''

_honest_forward = scaled_dot_product_attention_np


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    result = _honest_forward(Q, K, V, mask)
    Q[...] = 0.0                        # the bug: writes into its input
    return result
'''

# ex2, correct, plus the forgery: from visualize.py, find the worker's support snapshot
# (and any table holding one) and make call_returning_arguments send back copies taken before
# the call, so that the grader would see "unchanged" always.
FORGING_EX2 = solution("ex2") + '''

import gc as _gc
import sys as _sys


def _fake_unchanged(fn, args, kwargs=None):
    kwargs = dict(kwargs or {})
    before = [a.copy() if hasattr(a, "copy") else None for a in [*args, *kwargs.values()]]
    return fn(*args, **kwargs), before


def _forge():
    for obj in _gc.get_objects():
        try:
            support = getattr(obj, "_support", None)
            if support is not None and "autograd.call_returning_arguments" in support:
                forged = dict(support)
                forged["autograd.call_returning_arguments"] = _fake_unchanged
                obj._support = forged
            if isinstance(obj, dict) and "autograd.call_returning_arguments" in obj:
                obj["autograd.call_returning_arguments"] = _fake_unchanged
        except Exception:
            pass
    worker = _sys.modules.get("autograder.sandbox.worker")
    snapshot = getattr(worker, "_SUPPORT_SNAPSHOT", None)
    if isinstance(snapshot, dict):
        snapshot["autograd.call_returning_arguments"] = _fake_unchanged


_forge()
'''

# ex1, correct unless another student module shares its worker
LONELY_EX1 = solution("ex1") + '''

import sys as _sys
_honest_softmax = softmax


def softmax(x, axis=-1):
    others = {"visualize", "multihead", "causal", "lstm_vs_attention"} & set(_sys.modules)
    out = _honest_softmax(x, axis)
    return out * 0.5 if others else out
'''

SLOW_IMPORT = "\n\nimport time as _time\n_time.sleep(@S@)   # honest but slow demo work at import\n"
SLOW_GRADIENT_EX1 = solution("ex1") + '''

import time as _time
_honest_numerical_gradient = numerical_gradient


def numerical_gradient(*args, **kwargs):
    _time.sleep(60)                     # honest but far too slow
    return _honest_numerical_gradient(*args, **kwargs)
'''


def _submission(tmp_path, **overrides: str):
    files = {FILES[ex]: overrides.get(ex, solution(ex)) for ex in ("ex1", "ex2")}
    return write_submission(tmp_path / "sub", files)


def _score(graded, exercise: str) -> float:
    return graded.fates[exercise].score


def test_forgery_from_another_exercise_changes_nothing(tmp_path):
    plain = grade_cli(_submission(tmp_path / "a", ex1=IN_PLACE_EX1), tmp_path / "a",
                      "--exercises", "ex1,ex2", *OWN_USER)
    forged = grade_cli(_submission(tmp_path / "b", ex1=IN_PLACE_EX1, ex2=FORGING_EX2), tmp_path / "b",
                       "--exercises", "ex1,ex2", *OWN_USER)
    assert _score(plain, "ex1") < 20, "the in-place bug must cost points (else this test proves nothing)"
    assert _score(forged, "ex1") == _score(plain, "ex1")
    assert any("modif" in o or "unchanged" in o or "in place" in o for o in forged.outputs("ex1"))
    assert _score(forged, "ex2") == 20
    reported = forged.data["extra_data"].get("reach_ins", {})
    assert any(r[0] == "gc.get_objects" and r[1] == "visualize.py" for r in reported.get("ex2", []))
    assert "reach-in: ex2: visualize.py" in forged.stderr
    assert "reach_ins" not in plain.data["extra_data"]
    for test in forged.data["tests"]:                 # reported to staff, never to the student
        assert "reach" not in test.get("output", "") and "gc.get_objects" not in test.get("output", "")


def test_no_other_student_file_shares_an_exercise_worker(tmp_path):
    files = {FILES[ex]: solution(ex) for ex in FILES}
    files[FILES["ex1"]] = LONELY_EX1
    graded = grade_cli(write_submission(tmp_path / "sub", files), tmp_path,
                       "--exercises", "ex1,ex2,ex3,ex4,ex5", *OWN_USER)
    assert _score(graded, "ex1") == 20


def test_a_slow_exercise_costs_itself_only(tmp_path):
    slow = {ex: text + SLOW_IMPORT.replace("@S@", "6") for ex, text in
            {"ex1": SLOW_GRADIENT_EX1, "ex2": solution("ex2"), "ex3": solution("ex3")}.items()}
    files = {FILES[ex]: text for ex, text in slow.items()}
    graded = grade_cli(write_submission(tmp_path / "sub", files), tmp_path,
                       "--exercises", "ex1,ex2,ex3", "--timeout", "8", "--budget", "ex1=12,ex2=15,ex3=15",
                       *OWN_USER)
    fates = graded.fates
    assert fates["ex1"].status == "out_of_time"
    assert (fates["ex2"].status, fates["ex2"].score) == ("graded", 20)
    assert (fates["ex3"].status, fates["ex3"].score) == ("graded", 20)


def test_reach_ins_from_the_exercise_itself_are_reported(tmp_path):
    snooping = solution("ex1") + "\n\nimport sys as _sys\n_frame = _sys._getframe()\n"
    graded = grade_cli(_submission(tmp_path, ex1=snooping), tmp_path, "--exercises", "ex1", *OWN_USER)
    assert _score(graded, "ex1") == 20               # reported, not scored
    assert graded.data["extra_data"]["reach_ins"]["ex1"][0][:2] == ["sys._getframe", "attention.py"]
