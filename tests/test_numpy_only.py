"""ex1's NumPy-only functions are held to NumPy when they run (``sandbox/numpy_only.py``).

The static rule finds torch spelt out inside them; ``_T = __import__("to" + "rch")`` at the
top of the file hides it. Here ``softmax`` computes with torch through such a name, by three
routes: its own code, a ``functools.partial`` bound to the name (no ``def softmax`` for the
static rule, not a plain function for a wrapper that only wraps those), and torch's builtins
run by a pool thread (torch keeps dispatch modes per thread). Each case is first proved to
compute softmax (unguarded, in this process) and to pass the static rule; graded, every
softmax test and the rules test fail, saying why, and so do the functions that call it. The solution, whose ``numerical_gradient`` runs the kit's ``f`` (the kit's code, not
judged), keeps full marks (``tests/test_solutions.py`` grades it too).
"""
from __future__ import annotations

import types

import numpy as np
import pytest

from autograder import contract, intake
from autograder.grading import GradeRequest, grade
from autograder.sandbox import SandboxConfig
from helpers import make_submission, solution_file, worker_user

WORKER_USER = worker_user("numpyonly")
HIDDEN_TORCH = "_T = __import__('to' + 'rch')\n"
# route -> the text standing for the solution's softmax
SOFTMAX = {
    "own_code": '''def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return _T.softmax(_T.as_tensor(np.asarray(x, dtype=np.float64)), dim=axis).numpy()

''',
    "partial": '''def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return _T.softmax(_T.as_tensor(np.asarray(x, dtype=np.float64)), dim=axis).numpy()


import functools
softmax = functools.partial(_softmax)

''',
    "pool_thread": '''from concurrent.futures import ThreadPoolExecutor
_POOL = ThreadPoolExecutor(1)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    tensor = _POOL.submit(_T.as_tensor, np.asarray(x, dtype=np.float64)).result()
    weights = _POOL.submit(_T.softmax, tensor, axis).result()
    return _POOL.submit(_T.Tensor.numpy, weights).result()          # (.numpy() is an operation too)

''',
    # never bound in the file: handed out by the module's __getattr__ (red team s24, 20/20)
    "module_getattr": '''def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return _T.softmax(_T.as_tensor(np.asarray(x, dtype=np.float64)), dim=axis).numpy()


def __getattr__(name):
    if name == "softmax":
        return _softmax
    raise AttributeError(name)

''',
}


def _torch_softmax_source(route: str = "own_code") -> str:
    text = solution_file("ex1").read_text()
    start = text.index("def softmax(")
    end = text.index("\ndef ", start) + 1
    text = text[:start] + SOFTMAX[route] + text[end:]
    future = "from __future__ import annotations\n"
    return text.replace(future, future + HIDDEN_TORCH, 1)


@pytest.mark.parametrize("route", sorted(SOFTMAX))
def test_the_case_computes_softmax_with_torch_and_the_static_rule_misses_it(route):
    source = _torch_softmax_source(route)
    module = types.ModuleType("case")
    exec(compile(source, "case.py", "exec"), module.__dict__)
    x = np.random.default_rng(0).normal(size=(3, 4))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(module.softmax(x), e / e.sum(-1, keepdims=True), rtol=1e-12)
    assert intake.find_banned(source, contract.BY_ID["ex1"]) == []


def _grade(tmp_path, source: str):
    folder = make_submission(tmp_path, {"attention.py": source})
    return grade(GradeRequest(submission=folder, results_path=None, exercises=contract.select("ex1"),
                              config=SandboxConfig(call_timeout=20.0, user=WORKER_USER)))


@pytest.mark.parametrize("route", sorted(SOFTMAX))
def test_torch_inside_a_numpy_function_is_refused_when_it_runs(tmp_path, route):
    results = _grade(tmp_path, _torch_softmax_source(route))
    by_name = {t.name: t for t in results.tests}
    rules = [t for name, t in by_name.items() if "attention is written by hand" in name]
    assert len(rules) == 1 and not rules[0].passed
    assert "softmax must use NumPy only" in rules[0].output, rules[0].output[:400]
    softmax_tests = [t for name, t in by_name.items() if name.startswith("ex1 · softmax")]
    assert softmax_tests and not any(t.passed for t in softmax_tests), [t.name for t in softmax_tests if t.passed]
    np_tests = [t for name, t in by_name.items() if "scaled_dot_product_attention_np" in name and "by hand" in name]
    assert np_tests and not any(t.passed for t in np_tests)     # it calls softmax: the values earn nothing
    assert results.score < results.max_score / 2


@pytest.mark.parametrize("exercise", ["ex1"])
def test_the_solution_keeps_full_marks_under_the_guard(tmp_path, exercise):
    results = _grade(tmp_path, solution_file(exercise).read_text())
    assert results.score == results.max_score, [t.name for t in results.tests if not t.passed]
