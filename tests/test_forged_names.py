"""Code the student makes under another name is still the student's (``sandbox/trust.py``).

The banned-API guards judge a call by the file names on the stack. ex3 bans
``F.multi_head_attention_forward``, which only the Python layer sees (it runs generic
operators): here its ``MultiHeadAttention.forward`` is replaced by one that returns
``F.multi_head_attention_forward``'s result, made so that its frames do not carry the student
file's name: ``exec`` of a string, ``compile`` under a standard-library file's name, a
function's code copied with that name, and hand-made bytecode loaded by importlib; or whose
banned call is made by a library, not by the student's frame: a standard-library trampoline
(``concurrent.futures``' work item) and a pool thread. Each route is first proved to compute ex3's multi-head
attention when nothing guards it; graded, each must lose the banned-API test and every test the
solution's forward earns. Correct code is untouched by the guard: the solutions keep full marks
(``tests/test_solutions.py``), and a library compiling its own text (importlib without a cached
``.pyc``) passes (below).
"""
from __future__ import annotations

import functools
import importlib.util
import marshal
import sys
import threading
import types

import pytest
import torch

from autograder import contract
from autograder.grading import GradeRequest, grade
from autograder.sandbox import SandboxConfig, reachin, trust
from helpers import make_submission, solution_file, worker_user

WORKER_USER = worker_user("forged")
LIBRARY_FILE = functools.__file__            # a standard-library file
BANNED_TEST = "does not use torch.nn.MultiheadAttention"

# ex3's forward through the banned function (separate projections, per-head weights)
FORWARD = '''
def _mha(self, query, key, value, mask=None):
    F = torch.nn.functional
    B, n, d = query.shape
    h = self.num_heads
    attn_mask = None
    if mask is not None:
        attn_mask = ~torch.broadcast_to(mask.to(torch.bool), (B, h, n, key.shape[1])).reshape(B * h, n, -1)
    bias = None if self.W_q.bias is None else torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])
    out, w = F.multi_head_attention_forward(
        query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), d, h, None, bias, None, None,
        False, 0.0, self.W_o.weight, self.W_o.bias, training=False, need_weights=True, attn_mask=attn_mask,
        use_separate_proj_weight=True, q_proj_weight=self.W_q.weight, k_proj_weight=self.W_k.weight,
        v_proj_weight=self.W_v.weight, average_attn_weights=False)
    return out.transpose(0, 1), w
'''
# FORWARD as the file's own code, its banned call made through `_via(function, *args, **kwargs)`
_VIA_FORWARD = FORWARD.replace("F.multi_head_attention_forward(", "_via(F.multi_head_attention_forward, ")
# route -> code (after FORWARD's text is bound to _FORWARD) that binds _mha
ROUTES = {
    "exec_string": 'exec(compile(_FORWARD, "<string>", "exec"), globals())',
    "library_name": f'exec(compile(_FORWARD, {LIBRARY_FILE!r}, "exec"), globals())',
    "code_copied": ('exec(_FORWARD)\n'
                    f'_mha = types.FunctionType(_mha.__code__.replace(co_filename={LIBRARY_FILE!r}), globals())'),
    # bytecode made under a stand-in name of the same length, the name swapped in its bytes, and
    # handed to importlib by a loader: importlib (a library) unmarshals and runs it
    "importlib_bytecode": (
        'import importlib.machinery, importlib.util, marshal\n'
        f'_LIB = {LIBRARY_FILE!r}\n'
        '_blob = importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(compile(_FORWARD, "x" * len(_LIB), "exec"))'
        '.replace(("x" * len(_LIB)).encode(), _LIB.encode())\n'
        'class _Loader(importlib.machinery.SourcelessFileLoader):\n'
        '    def get_data(self, path):\n'
        '        return _blob\n'
        '_spec = importlib.util.spec_from_loader("_forged", _Loader("_forged", _LIB + "c"))\n'
        '_forged = importlib.util.module_from_spec(_spec)\n'
        '_forged.torch = torch\n'
        '_spec.loader.exec_module(_forged)\n'
        '_mha = _forged._mha'),
    # the unguarded original, read from the guard's closure (no closure unguarded: F's own)
    "guard_closure": (
        'def _original(guard):\n'
        '    for cell in getattr(guard, "__closure__", None) or ():\n'
        '        try:\n'
        '            found = cell.cell_contents\n'
        '        except ValueError:\n'
        '            continue\n'
        '        if getattr(found, "__name__", "") == "multi_head_attention_forward":\n'
        '            return found\n'
        '    return guard\n'
        '_RAW = _original(torch.nn.functional.multi_head_attention_forward)\n'
        + FORWARD.replace("F.multi_head_attention_forward(", "_RAW(")),
    # the guards' state emptied, found through sys.modules or through the guard's globals
    "kit_state": (
        'import sys as _sys\n'
        'def _disarm(namespace):\n'
        '    for _guard in dict(namespace.get("_GUARDS", {})).values():\n'
        '        getattr(_guard, "checkers", []).clear()\n'
        'for _name, _mod in list(_sys.modules.items()):\n'
        '    if _name.startswith("autograder"):\n'
        '        _disarm(vars(_mod))\n'
        '_disarm(getattr(torch.nn.functional.multi_head_attention_forward, "__globals__", {}))\n'
        + FORWARD),
    # the banned function called through a standard-library trampoline (the guard's immediate
    # caller is then a library file), in this thread and in a pool thread (whose stack holds no
    # student frame); the forward is the student file's own code here
    "stdlib_trampoline": (
        'from concurrent.futures import Future\n'
        'from concurrent.futures.thread import _WorkItem\n'
        'def _via(function, *args, **kwargs):\n'
        '    done = Future()\n'
        '    _WorkItem(done, function, args, kwargs).run()\n'
        '    return done.result()\n' + _VIA_FORWARD),
    "thread_pool": (
        'from concurrent.futures import ThreadPoolExecutor\n'
        '_POOL = ThreadPoolExecutor(1)\n'
        'def _via(function, *args, **kwargs):\n'
        '    return _POOL.submit(function, *args, **kwargs).result()\n' + _VIA_FORWARD),
}

THROUGH_A_LIBRARY = {"stdlib_trampoline", "thread_pool", "guard_closure", "kit_state"}     # the student's own frames


def _source(route: str) -> str:
    return (solution_file("ex3").read_text() + "\n\nimport types\n"
            f"_FORWARD = {FORWARD!r}\n{ROUTES[route]}\nMultiHeadAttention.forward = _mha\n")


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = f"{name}.py"
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_route_computes_multi_head_attention_when_unguarded(route):
    """(In this process: no guard installed.) The route's forward equals the solution's."""
    routed, solution = _module(_source(route), f"routed_{route}"), _module(solution_file("ex3").read_text(), "sol")
    torch.manual_seed(0)
    model = solution.MultiHeadAttention(8, 2)
    forged = routed.MultiHeadAttention(8, 2)
    forged.load_state_dict(model.state_dict())
    x = torch.randn(2, 5, 8)
    mask = torch.rand(2, 1, 5, 5) > 0.3
    mask[..., 0] = True
    for got, want in zip(forged(x, x, x, mask), model(x, x, x, mask)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    if route not in THROUGH_A_LIBRARY:
        assert forged.forward.__code__.co_filename != "routed_" + route + ".py"      # another name on its frames


def _grade(tmp_path, source: str):
    folder = make_submission(tmp_path, {contract.BY_ID["ex3"].filename: source})
    return grade(GradeRequest(submission=folder, results_path=None, exercises=contract.select("ex3"),
                              config=SandboxConfig(call_timeout=20.0, user=WORKER_USER)))


@pytest.fixture(scope="module")
def solution_passes(tmp_path_factory) -> set[str]:
    results = _grade(tmp_path_factory.mktemp("solution"), solution_file("ex3").read_text())
    assert results.score == results.max_score
    return {t.name for t in results.tests}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_forged_name_does_not_pass_for_library_code(route, tmp_path, solution_passes):
    results = _grade(tmp_path, _source(route))
    banned = [t for t in results.tests if BANNED_TEST in t.name]
    assert len(banned) == 1 and not banned[0].passed, [t.name for t in results.tests]
    assert "not allowed" in banned[0].output, banned[0].output[:500]
    earned = {t.name for t in results.tests if t.passed and "forward" in t.name.lower()}
    assert not earned, f"{route}: forward tests earned with the banned function: {sorted(earned)}"
    assert results.score < results.max_score / 2, results.score


def test_library_code_and_its_own_text_pass_the_name_check():
    """The hook's decisions, called directly (no hook is installed in this process): a
    library file compiled from its own text passes; another text under its name, or a code
    object with its name run or made from student code, is refused."""
    refused: list[str] = []
    guard = trust.NameForgeryGuard(on_refusal=refused.append)
    with open(LIBRARY_FILE, "rb") as handle:
        own = handle.read()
    guard._hook("compile", (own, LIBRARY_FILE))                        # importlib without a .pyc
    guard._hook("compile", (b"x = 1", "<string>"))                     # any name that is no library's
    guard._hook("exec", (compile("x = 1", "student.py", "exec"),))
    assert not refused
    forged = compile("x = 1", LIBRARY_FILE, "exec")
    for event, args in (("compile", (b"x = 1", LIBRARY_FILE)), ("exec", (forged,)),
                        ("code.__new__", (b"", LIBRARY_FILE, "f", 0)), ("function.__new__", (forged,)),
                        ("object.__setattr__", (lambda: 0, "__code__", forged))):
        with pytest.raises(PermissionError, match="not allowed"):
            _call_from_student_code(guard, event, args)
    assert len(refused) == 5
    assert trust.is_library_file(LIBRARY_FILE) and trust.is_library_file(torch.__file__)
    assert not trust.is_library_file("attention.py") and not trust.is_library_file("<string>")


def test_bytecode_under_a_library_name_is_refused_unless_it_is_that_librarys_pyc():
    """``marshal.loads`` (importlib loading a ``.pyc``, or anyone): a library's own cached
    bytecode and bytecode of a student-named file pass, whoever loads them; bytecode claiming a
    library file's name, at the top or in a nested function, is refused even when importlib
    (a library) loads it. ``marshal.load`` from a file, which the hook cannot read, is refused
    from student code only."""
    refused: list[str] = []
    guard = trust.NameForgeryGuard(on_refusal=refused.append)
    with open(importlib.util.cache_from_source(LIBRARY_FILE), "rb") as handle:
        own = handle.read()[trust.PYC_HEADER_BYTES:]
    guard._hook("marshal.loads", (own,))                                    # importlib, a .pyc
    _call_from_student_code(guard, "marshal.loads", (own,))                 # anyone
    _call_from_student_code(guard, "marshal.loads", (marshal.dumps(compile("x = 1", "student.py", "exec")),))
    _call_from_student_code(guard, "marshal.loads", (marshal.dumps([1, "a"]),))       # no code at all
    _call_from(LIBRARY_FILE, guard, "marshal.load", ())                     # a library reading a file
    assert not refused
    nested = compile("def f():\n    return 1\n", "student.py", "exec")
    nested = nested.replace(co_consts=tuple(c.replace(co_filename=LIBRARY_FILE) if isinstance(c, types.CodeType)
                                            else c for c in nested.co_consts))
    for data in (marshal.dumps(compile("x = 1", LIBRARY_FILE, "exec")), marshal.dumps(nested)):
        with pytest.raises(PermissionError, match="not allowed"):
            guard._hook("marshal.loads", (data,))
    with pytest.raises(PermissionError, match="marshal.load"):
        _call_from_student_code(guard, "marshal.load", ())
    assert len(refused) == 3


def _call_from_student_code(guard: trust.NameForgeryGuard, event: str, args: tuple) -> None:
    """Raise ``event`` at the hook from a frame of a student-named file (the hook's caller check
    looks at the frame that raised the event)."""
    _call_from("student.py", guard, event, args)


def _call_from(filename: str, guard: trust.NameForgeryGuard, event: str, args: tuple) -> None:
    """Raise ``event`` at the hook from a frame of code named ``filename``."""
    namespace = {"hook": guard._hook, "event": event, "args": args}
    exec(compile("hook(event, args)", filename, "exec"), namespace)


def _inside_the_hook_in_another_thread(hook, marker_event: str, marker_args: tuple, method: str, owner):
    """Start a thread that enters ``hook`` with the marker event and stays inside it (its
    ``method`` blocks) until the returned ``done`` is called; other calls see the method as
    it is (its frame count matters: the hooks read their caller's frame by depth)."""
    entered, release = threading.Event(), threading.Event()
    real = getattr(owner, method)

    def held(*args):
        entered.set()
        release.wait(10)
        return real(*args)

    setattr(owner, method, held)
    thread = threading.Thread(target=hook, args=(marker_event, marker_args))
    thread.start()
    assert entered.wait(10)
    delattr(owner, method)                        # the thread is inside; others get the real one

    def done():
        release.set()
        thread.join(10)
    return done


def test_one_threads_event_in_the_hook_does_not_blind_it_to_anothers():
    """The hooks skip the events they raise themselves, per thread: while one thread is inside
    the name check (or the reach-in watch), another thread's forged name is still refused
    and its reach-in still recorded. A single flag shared by all threads let a student thread
    that raises events all the time open a window for another."""
    guard = trust.NameForgeryGuard()
    done = _inside_the_hook_in_another_thread(guard._hook, "compile", (b"x = 1", "<other>"), "_forged_name", guard)
    try:
        with pytest.raises(PermissionError, match="not allowed"):
            _call_from_student_code(guard, "compile", (b"x = 1", LIBRARY_FILE))
    finally:
        done()

    watch = reachin.ReachInWatch({"student.py"})
    done = _inside_the_hook_in_another_thread(watch._hook, "gc.get_objects", (), "_student_frame", watch)
    try:
        namespace = {"hook": watch._hook}
        exec(compile("hook('gc.get_objects', ())", "student.py", "exec"), namespace)
    finally:
        done()
    assert ["gc.get_objects", "student.py", 1] in watch.new_records()
