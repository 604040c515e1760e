"""Banned APIs refused whichever way they are reached.

For every exercise that bans ``F.scaled_dot_product_attention`` (ex1, ex3, ex4, ex5), the
solution with its one attention line (``weights @ V``) computed by the banned op instead,
reached through: the normal binding, ``__wrapped__``, ``torch.ops.aten.*``,
``torch._C._nn.*``, a computed ``getattr`` name, a lambda alias, a ``functools.partial``
alias, and a thread pool running ``torch.ops.aten.*`` itself (the thread's stack holds no
student frame: it is judged with the code that started it, ``sandbox/threads.py``). Each route must lose the banned-API test, and every test that the same file with
that line replaced by ``raise NotImplementedError`` fails (its values computed with the
banned op earn nothing). Each route is first proved to compute attention correctly when
nothing guards it (so a lost test is the guard's doing, not a broken case).

Then: the guard at each isolation level (namespaces, user, process) and in a spawned worker
(Windows and macOS, and ``check``'s public tests there), and correct code untouched (the
solutions keep full marks: ``tests/test_solutions.py``, ``tests/test_suites_corpus.py``).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from autograder import contract
from autograder.grading import GradeRequest, grade
from autograder.results import Results
from autograder.sandbox import SandboxConfig
from helpers import ROOT, kit_modes_restored, make_submission, solution_file, worker_user
import warm_cli

WORKER_USER = worker_user("banned")
IS_ROOT = os.geteuid() == 0
PYTHON = ROOT / ".venv" / "bin" / "python"

# exercise -> (the solution's line computed by attention, its indent + target, the kwargs)
LINES = {
    "ex1": ("    output = weights @ V                                        # (..., n, d_v)",
            "    output = ", "(Q, K, V, attn_mask=mask)"),
    "ex3": ("        heads = weights @ v                                     # (B, h, n, d_head)",
            "        heads = ", "(q, k, v, attn_mask=mask)"),
    "ex4": ("    output = weights @ V                                        # (B, n, d_v)",
            "    output = ", "(Q, K, V, is_causal=True)"),
    "ex5": ("        attended = weights @ v                                  # (B, n, d_model)",
            "        attended = ", "(q, k, v)"),
}
# the banned-API test of each exercise, by the start of its title
BANNED_TEST = {"ex1": "attention is written by hand", "ex3": "does not use torch.nn.MultiheadAttention",
               "ex4": "causal attention is written by hand", "ex5": "lstm_vs_attention.py writes its own attention"}

PRELUDE = ("import functools as _functools\nimport torch.nn.functional as _F\n"
           "_LAMBDA = lambda *a, **kw: _F.scaled_dot_product_attention(*a, **kw)\n"
           "_PARTIAL = _functools.partial(_F.scaled_dot_product_attention)\n"
           "from concurrent.futures import ThreadPoolExecutor as _Pool\n_POOL = _Pool(1)\n")
# route -> the callable's expression (in a file that starts with PRELUDE)
ROUTES = {
    "binding": "_F.scaled_dot_product_attention",
    "wrapped": 'getattr(_F.scaled_dot_product_attention, "__wrapped__", _F.scaled_dot_product_attention)',
    "aten": "torch.ops.aten.scaled_dot_product_attention",
    "c_nn": "torch._C._nn.scaled_dot_product_attention",
    "computed": 'getattr(_F, "scaled_dot_" + "product_attention")',
    "lambda": "_LAMBDA",
    "partial": "_PARTIAL",
    "aten_flash": "(lambda *a, **kw: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(*a, **kw)[0])",
    "thread": "(lambda *a, **kw: _POOL.submit(torch.ops.aten.scaled_dot_product_attention, *a, **kw).result())",
}
FLASH_OK = {"ex3", "ex5"}            # 4-d (or batched 3-d) inputs, no mask argument there


def _source(ex_id: str, replacement: str) -> str:
    """The solution with its attention line replaced by ``replacement`` (a whole line)."""
    line = LINES[ex_id][0]
    text = solution_file(ex_id).read_text()
    assert text.count(line) >= 1, f"the solution of {ex_id} changed: update LINES"
    before, _, after = text.rpartition(line)
    future = "from __future__ import annotations\n"
    before = before.replace(future, future + PRELUDE, 1)
    return before + replacement + after


def routed(ex_id: str, route: str) -> str:
    _, head, args = LINES[ex_id]
    return _source(ex_id, head + ROUTES[route] + args)


def _config(**extra) -> SandboxConfig:
    return SandboxConfig(call_timeout=20.0, user=WORKER_USER, **extra)


def grade_one(tmp: Path, ex_id: str, source: str, **extra) -> Results:
    ex = contract.BY_ID[ex_id]
    folder = make_submission(tmp, {ex.filename: source})
    return grade(GradeRequest(submission=folder, results_path=None, exercises=contract.select(ex_id),
                              config=_config(**extra)))


def _failed(results: Results) -> set[str]:
    return {t.name for t in results.tests if not t.passed}


def _banned_test(results: Results, ex_id: str):
    found = [t for t in results.tests if BANNED_TEST[ex_id] in t.name]
    assert len(found) == 1, [t.name for t in results.tests]
    return found[0]


_BASELINES: dict[str, set[str]] = {}


def _baseline(ex_id: str, tmp: Path) -> set[str]:
    """The tests lost when the attention line does not exist at all."""
    if ex_id not in _BASELINES:
        indent = LINES[ex_id][1][: len(LINES[ex_id][1]) - len(LINES[ex_id][1].lstrip())]
        results = grade_one(tmp / "baseline", ex_id, _source(ex_id, indent + "raise NotImplementedError"))
        _BASELINES[ex_id] = _failed(results)
    return _BASELINES[ex_id]


# --------------------------------------------------------------------------- the cases are honest

def _route_function(route: str):
    namespace: dict = {"torch": torch}
    exec(PRELUDE, namespace)
    return eval(ROUTES[route], namespace)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_route_computes_attention_when_unguarded(route):
    fn = _route_function(route)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64) for _ in range(3))
    want = torch.softmax(q @ k.transpose(-2, -1) / 5 ** 0.5, -1) @ v
    torch.testing.assert_close(fn(q, k, v), want)
    if route != "aten_flash":
        mask = torch.rand(4, 4, generator=g) < 0.6
        mask[:, 0] = True
        scores = (q @ k.transpose(-2, -1) / 5 ** 0.5).masked_fill(~mask, float("-inf"))
        torch.testing.assert_close(fn(q, k, v, attn_mask=mask), torch.softmax(scores, -1) @ v)
        causal = torch.ones(4, 4, dtype=torch.bool).tril()
        scores = (q @ k.transpose(-2, -1) / 5 ** 0.5).masked_fill(~causal, float("-inf"))
        torch.testing.assert_close(fn(q, k, v, is_causal=True), torch.softmax(scores, -1) @ v)


SDPA = "torch.nn.functional.scaled_dot_product_attention"
# the original, taken when pytest imports this file (before any test installs a guard): a
# guard keeps its original sealed away (sandbox/sealed.py), so it cannot hand it back
_UNGUARDED_SDPA = F.scaled_dot_product_attention


@pytest.fixture
def unguarded_sdpa():
    """``F.scaled_dot_product_attention`` unguarded, as in a fresh process, before the test and
    after it: an in-process grading earlier in this test process (``check --in-process``)
    leaves its guard installed, which the test would otherwise take for the original."""
    from autograder.sandbox import guards

    def unguard() -> None:
        guard = guards._GUARDS.pop(SDPA, None)
        if guard is not None and guard.in_place(SDPA):
            guards._rebind_everywhere(guard.installed, _UNGUARDED_SDPA)

    unguard()
    original = F.scaled_dot_product_attention
    yield original
    guards._rebind_everywhere(F.scaled_dot_product_attention, original)
    guards._GUARDS.pop(SDPA, None)


def test_the_python_guard_hides_the_original(unguarded_sdpa):
    """``__wrapped__`` of a guard would lead straight past it: guards have none."""
    from autograder.sandbox import guards
    guards.BanGuards().ban("student.py", (SDPA,))
    assert F.scaled_dot_product_attention is not unguarded_sdpa
    assert not hasattr(F.scaled_dot_product_attention, "__wrapped__")


def test_a_preinstalled_guard_refuses_only_once_a_file_is_banned(unguarded_sdpa):
    """The zygote installs every guard before it forks (``guards.preinstall``): the guard lets
    everyone through until a ``ban`` names a file, then refuses that file's calls, and the
    ``ban`` reuses it (no second rebinding walk in the worker); a guard that was taken away is
    installed again."""
    from autograder.sandbox import guards
    name, saved = SDPA, unguarded_sdpa
    q = torch.ones(1, 2, 4)
    student = compile("def attend(q):\n    return F.scaled_dot_product_attention(q, q, q)\n",
                      "preinstalled_student.py", "exec")
    namespace = {"F": F}
    exec(student, namespace)
    guards.preinstall([name])
    guard = F.scaled_dot_product_attention
    assert guard is not saved
    torch.testing.assert_close(namespace["attend"](q), saved(q, q, q))    # nobody banned yet
    guards.BanGuards().ban("preinstalled_student.py", (name,))
    assert F.scaled_dot_product_attention is guard                         # reused, not rebound
    with pytest.raises(guards.BannedAPIError):
        namespace["attend"](q)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, q, q), saved(q, q, q))  # the kit's own calls
    guards._rebind_everywhere(guard, saved)                                # taken away…
    guards.BanGuards().ban("preinstalled_student.py", (name,))
    assert F.scaled_dot_product_attention is not saved                     # …and back
    with pytest.raises(guards.BannedAPIError):
        namespace["attend"](q)


# --------------------------------------------------------------------------- every route loses

CASES = [pytest.param(ex, route, id=f"{ex}-{route}") for ex in LINES for route in ROUTES
         if route != "aten_flash" or ex in FLASH_OK]


@pytest.mark.parametrize("ex_id, route", CASES)
def test_banned_op_loses_the_rule_and_the_values(ex_id, route, tmp_path):
    results = grade_one(tmp_path / "routed", ex_id, routed(ex_id, route))
    baseline = _baseline(ex_id, tmp_path)
    banned = _banned_test(results, ex_id)
    assert not banned.passed, f"{ex_id}/{route}: the banned-API test passed"
    assert "not allowed" in banned.output or "forbids" in banned.output, banned.output[:500]
    kept = baseline - _failed(results)
    assert not kept, f"{ex_id}/{route}: tests earned with the banned op: {sorted(kept)}"
    assert results.score < results.max_score


def test_catching_the_refusal_does_not_help(tmp_path):
    """A student who catches the refusal and falls back to their own code still loses the
    call (the op was reached): the request fails on the way out."""
    source = _source("ex5", LINES["ex5"][1] + "_try_sdpa(q, k, v, lambda: weights @ v)") + (
        "\n\ndef _try_sdpa(q, k, v, fallback):\n"
        "    try:\n"
        "        return torch.ops.aten.scaled_dot_product_attention(q, k, v)\n"
        "    except Exception:\n"
        "        return fallback()\n")
    results = grade_one(tmp_path, "ex5", source)
    assert not _banned_test(results, "ex5").passed
    assert _baseline("ex5", tmp_path) <= _failed(results)


def test_exercises_without_the_ban_may_use_it(tmp_path):
    """ex2 bans nothing: a helper there calling the op is graded as usual (full marks)."""
    ex = contract.BY_ID["ex2"]
    text = solution_file("ex2").read_text() + (
        "\n\nimport torch as _torch\n"
        "_X = _torch.ops.aten.scaled_dot_product_attention(*(_torch.ones(1, 2, 2),) * 3)\n")
    results = grade_one(tmp_path, "ex2", text)
    assert results.score == results.max_score, _failed(results)


# --------------------------------------------------------------------------- every level, spawn, check

def _cli(tmp: Path, ex_id: str, source: str, level: str, env_extra: dict | None = None) -> dict:
    """Grade through the CLI at one isolation level (the user level with a Python outside
    /root, the kit folders' modes put back after)."""
    ex = contract.BY_ID[ex_id]
    folder = make_submission(tmp, {ex.filename: source})
    python = str(PYTHON)
    if level == "user":
        from outside_python import outside_python
        python = str(outside_python())
    results_path = tmp / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", **(env_extra or {}))
    with kit_modes_restored():
        proc = warm_cli.run([python, "-m", "autograder", "grade", str(folder), "--exercises", ex_id,
                             "--results", str(results_path), "--worker-user", WORKER_USER,
                             "--isolation", level], cwd=tmp, env=env, text=True, timeout=300)
    assert results_path.exists(), proc.stderr[-3000:]
    data = json.loads(results_path.read_text())
    assert data["extra_data"]["isolation"] == level, proc.stderr[-2000:]
    return data


LEVELS = [pytest.param("namespaces", marks=pytest.mark.skipif(not IS_ROOT, reason="needs root")),
          pytest.param("user", marks=pytest.mark.skipif(not IS_ROOT, reason="needs root")),
          "process"]


@pytest.mark.parametrize("level", LEVELS)
def test_the_operator_guard_holds_at_every_level(level, tmp_path):
    data = _cli(tmp_path, "ex5", routed("ex5", "computed"), level)
    tests = [t for t in data["tests"] if t["name"].startswith("ex5")]
    banned = [t for t in tests if BANNED_TEST["ex5"] in t["name"]]
    assert banned and banned[0]["score"] == 0, banned
    assert "not allowed" in banned[0]["output"] or "forbids" in banned[0]["output"]
    assert data["score"] < sum(t["max_score"] for t in tests)


def test_a_spawned_worker_refuses_it_too(tmp_path):
    """Windows and macOS (and ``check`` there) start workers with ``spawn``: same guard."""
    results = grade_one(tmp_path, "ex4", routed("ex4", "aten"), isolation="process", worker_start="spawn")
    assert not _banned_test(results, "ex4").passed
    assert _baseline("ex4", tmp_path) <= _failed(results)


def test_check_refuses_it_in_a_spawned_worker(tmp_path):
    """Students' ``check`` (public tests only, a spawned worker): the op is refused there too."""
    folder = make_submission(tmp_path, {"causal.py": routed("ex4", "aten")})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(PYTHONPATH=str(ROOT), MPLBACKEND="Agg", AUTOGRADER_WORKER_START="spawn")
    proc = subprocess.run([str(PYTHON), "-m", "autograder", "check", "ex4"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    out = " ".join((proc.stdout + proc.stderr).split())        # the report wraps lines
    assert "BannedAPIError: ex4 forbids scaled_dot_product_attention" in out, out[-3000:]
    assert proc.returncode != 0, out[-3000:]


# --------------------------------------------------------------------------- ex5: in AttentionClassifier only

SELF_CHECK = '''

# a self-check of my attention against PyTorch's, outside AttentionClassifier (allowed there)
import torch.nn.functional as _F
_q = torch.randn(2, 3, 4)
_mine = torch.softmax(_q @ _q.transpose(-1, -2) / 2.0, dim=-1) @ _q
assert torch.allclose(_mine, _F.scaled_dot_product_attention(_q, _q, _q), atol=1e-5)


def compare_with_pytorch(x):
    return getattr(_F, "scaled_dot_product_" + "attention")(x, x, x)


compare_with_pytorch(_q)
'''


def test_ex5_allows_attention_outside_attention_classifier(tmp_path):
    """ex5's contract bans attention "in ``AttentionClassifier``": the file's own code may
    compare with PyTorch's (at import, and in a function of its own), at every layer
    (red team: the run-time layers once refused it for the whole file, 0/20)."""
    results = grade_one(tmp_path, "ex5", solution_file("ex5").read_text() + SELF_CHECK)
    assert results.score == results.max_score, [(t.name, t.output[:200]) for t in results.tests if not t.passed]


def test_ex5s_ban_follows_the_class_under_any_name(tmp_path):
    """The class bound to ``AttentionClassifier`` is what the ban covers, whatever its own
    name: here the solution's class renamed, its attention line computed by the banned op
    through a computed name, and bound to the contract's name afterwards."""
    source = routed("ex5", "computed").replace("class AttentionClassifier(", "class _Impl(")
    source += "\n\nAttentionClassifier = _Impl\n"
    results = grade_one(tmp_path, "ex5", source)
    assert not _banned_test(results, "ex5").passed
    assert _baseline("ex5", tmp_path) <= _failed(results)


# --------------------------------------------------------------------------- work left for the kit

LAZY = '''

import itertools as _it

_MATH = getattr(torch.ops.aten, "_scaled_dot_product_attention_" + "math")    # banned, computed name


def _lazy(make_items):
    """A result whose items are computed when read: by the kit, after this file returned."""
    class _Result(tuple):
        def __iter__(self):
            return make_items()

        def __getitem__(self, index):
            return list(make_items())[index]

        def __len__(self):
            return 2
    return _Result()


def causal_self_attention(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    return _lazy(lambda: _it.chain.from_iterable(map(_MATH, [Q], [K], [V], [None], [0.0], [True])))
'''


def test_a_result_that_computes_when_the_kit_reads_it_earns_nothing(tmp_path):
    """ex4's causal attention returned as an object whose items a banned operator computes
    when read (an overridden ``__iter__``/``__getitem__`` over ``map`` and ``itertools``): no
    student frame is on the stack then, only the kit's and the standard library's (red team:
    full marks in ex1, ex3 and ex4). The worker reads results past such overrides (the real
    items: none here), and in a worker a banned operator with no student code under it is the
    student's (``tests/test_culprit.py``)."""
    results = grade_one(tmp_path, "ex4", solution_file("ex4").read_text() + LAZY)
    # its rules hold ("does not modify x … (and runs)", "written by hand … (and runs)"): it runs,
    # and the kit, reading its result's real items (none), never runs the banned operator
    rules = ("does not modify", "written by hand")
    earned = {t.name for t in results.tests if t.passed and "causal_self_attention" in t.name
              and not any(rule in t.name for rule in rules)}
    assert not earned, f"tests earned by a result computed after return: {sorted(earned)}"
