"""The grading engine's own pieces: wire format, worker protocol, intake, results."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch

from autograder import contract, intake, results
from autograder.sandbox import (ModuleSource, NotImplementedByStudent, Remote, Sandbox, SandboxConfig,
                                StudentError, StudentModules, UnsupportedValue, WorkerCrashed, fetch)
from autograder.sandbox import backends, wire
from helpers import grade_folder, make_submission, solution_file, worker_user

# --------------------------------------------------------------------------- wire format


def roundtrip(value):
    enc = wire.Encoder()
    tree = enc.encode(value)
    frame = wire.pack({"v": tree}, enc.buffers)
    a, b = __import__("socket").socketpair()
    try:
        a.sendall(frame)
        header, buffers = wire.recv(b)
    finally:
        a.close(), b.close()
    return wire.Decoder(buffers).decode(header["v"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16,
                                   torch.int64, torch.bool, torch.complex64])
def test_tensors_keep_dtype_shape_and_requires_grad(dtype):
    t = (torch.arange(24).reshape(2, 3, 4) % 5).to(dtype)
    if t.is_floating_point():
        t.requires_grad_(True)
    back = roundtrip(t)
    assert type(back) is torch.Tensor and back.dtype == dtype and back.shape == t.shape
    assert back.requires_grad == t.requires_grad
    assert torch.equal(back.detach(), t.detach())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "complex128", "uint8"])
def test_arrays_keep_dtype_and_values(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    back = roundtrip(a[:, ::2])                  # non-contiguous view
    assert type(back) is np.ndarray and back.dtype == a.dtype
    np.testing.assert_array_equal(back, a[:, ::2])


@pytest.mark.parametrize("value", [np.array(2.5), np.full((), 2.5, dtype=np.float32), torch.tensor(2.5)])
def test_zero_dimensional_values_keep_their_shape(value):
    back = roundtrip(value)
    assert back.shape == () and float(back) == 2.5


def test_containers_and_scalars_roundtrip():
    value = {"a": [1, 2.5, None, True, "x", b"\x00\x01"], 3: (np.float64(1.5), np.int32(7), 1 + 2j),
             "nan": float("nan"), "size": torch.Size([2, 3])}
    back = roundtrip(value)
    assert back["a"] == [1, 2.5, None, True, "x", b"\x00\x01"]
    assert back[3] == (1.5, 7, 1 + 2j) and type(back[3][0]) is float and type(back[3][1]) is int
    assert np.isnan(back["nan"]) and back["size"] == (2, 3)


def test_subclasses_arrive_as_base_classes():
    class Liar(np.ndarray):
        def __eq__(self, other):
            return True

    class TLiar(torch.Tensor):
        pass

    arr = roundtrip(np.zeros(3).view(Liar))
    ten = roundtrip(torch.zeros(3).as_subclass(TLiar))
    assert type(arr) is np.ndarray and type(ten) is torch.Tensor
    assert not (arr == np.ones(3)).any()


@pytest.mark.parametrize("bad", [object(), np.array([object()]), {(1, 2): 3}, lambda: 1])
def test_unencodable_values_are_refused(bad):
    with pytest.raises(wire.Unencodable):
        wire.Encoder().encode(bad)


@pytest.mark.parametrize("tree,buffers", [
    ({"A": 0, "dtype": "<f8", "shape": [4]}, [b"\x00" * 8]),          # size mismatch
    ({"A": 0, "dtype": "|O", "shape": [1]}, [b"\x00" * 8]),           # object dtype
    ({"X": 3, "dtype": "float32", "shape": [1]}, []),                  # bad buffer index
    ({"Q": 1}, []),                                                    # unknown tag
    ({"pickle": "gASV"}, []),
])
def test_decoder_is_strict(tree, buffers):
    with pytest.raises(wire.WireError):
        wire.Decoder(buffers).decode(tree)


# --------------------------------------------------------------------------- worker protocol

WORKER_SOURCE = '''
import numpy as np, torch, os
def add(a, b): return a + b
def todo(x): raise NotImplementedError
def torch_todo(): return torch.nn.Module()(torch.ones(1))   # torch raises NotImplementedError
def boom(): raise ValueError("bad thing")
def obj(): return object()
def hang():
    while True: pass
def leave(): os._exit(3)
class Box(torch.nn.Module):
    def __init__(self): super().__init__(); self.lin = torch.nn.Linear(2, 2)
    def forward(self, x): return self.lin(x)
print("hello from import")
'''


@pytest.fixture(scope="module", params=["sandbox", "in_process"])
def worker(request):
    backend = backends.InProcessBackend() if request.param == "in_process" else None
    box = Sandbox([ModuleSource("mod", "mod.py", WORKER_SOURCE),
                   ModuleSource("broken", "broken.py", "def f(:\n    pass\n")],
                  SandboxConfig(call_timeout=2.0), backend)
    box.start()
    yield box, StudentModules(box, ["mod", "broken"])
    box.close()


def test_calls_return_fresh_data(worker):
    _, student = worker
    out = student.mod.add(np.ones(3), np.ones(3))
    assert type(out) is np.ndarray and out.tolist() == [2, 2, 2]
    assert student.mod.add(torch.ones(2, dtype=torch.float64), 1).dtype == torch.float64


def test_objects_stay_in_the_worker_as_handles(worker):
    _, student = worker
    box = student.mod.Box()
    assert isinstance(box, Remote)
    state = box.state_dict()
    assert set(state) == {"lin.weight", "lin.bias"}
    assert box(torch.zeros(1, 2)).shape == (1, 2)
    assert isinstance(fetch(box.lin.weight), torch.Tensor)
    with pytest.raises(TypeError):
        list(box)


def test_student_errors_become_messages(worker):
    _, student = worker
    with pytest.raises(NotImplementedByStudent, match="not implemented yet"):
        student.mod.todo(1)
    with pytest.raises(StudentError, match="NotImplementedError") as raised:   # torch's, not a stub's
        student.mod.torch_todo()
    assert not isinstance(raised.value, NotImplementedByStudent)
    with pytest.raises(StudentError, match=r"ValueError: bad thing[\s\S]*mod.py, line 6"):
        student.mod.boom()
    with pytest.raises(UnsupportedValue, match="object"):
        student.mod.obj()


def test_import_errors_cost_only_that_module(worker):
    box, student = worker
    with pytest.raises(StudentError, match="broken.py has a syntax error on line 1"):
        student.broken.f()          # one worker per exercise: a module loads when first used
    assert box.load_error("broken").type == "SyntaxError" and box.load_error("broken").is_syntax_error
    assert student.mod.add(1, 2) == 3


def test_reseed_resets_the_workers_generators_even_if_the_student_replaced_them():
    source = ("import random, numpy as np, torch\n"
              "torch.manual_seed = np.random.seed = random.seed = lambda *a, **k: None\n"
              "def draw(): return torch.rand(1).item(), float(np.random.rand()), random.random()\n")
    box = Sandbox([ModuleSource("mod", "mod.py", source)], SandboxConfig(call_timeout=5.0))
    box.start()
    try:
        mod = StudentModules(box, ["mod"]).mod
        box.reseed(7)
        first = mod.draw()
        assert mod.draw() != first
        box.reseed(7)
        assert mod.draw() == first
    finally:
        box.close()


def test_the_seed_rides_on_the_first_request_and_reaches_a_restarted_worker():
    """reseed() sends nothing of its own: the next call carries the seed, also when that call
    first starts a worker again after a crash (what the grading plugin promises each test)."""
    source = ("import os, random, numpy as np, torch\n"
              "def draw(): return torch.rand(1).item(), float(np.random.rand()), random.random()\n"
              "def leave(): os._exit(3)\n")
    box = Sandbox([ModuleSource("mod", "mod.py", source)], SandboxConfig(call_timeout=5.0))
    box.start()
    try:
        mod = StudentModules(box, ["mod"]).mod
        mod.draw()                                          # the worker runs
        sent = []
        worker = box._worker
        real = worker.request
        worker.request = lambda request, timeout: sent.append(request) or real(request, timeout)
        box.reseed(7)
        assert sent == []                                   # no round trip of its own
        first = mod.draw()
        assert [r.seed for r in sent] == [7]                # on the test's first call
        assert mod.draw() != first and [r.seed for r in sent] == [7, None]
        with pytest.raises(WorkerCrashed):
            mod.leave()
        box.reseed(7)
        assert mod.draw() == first                          # a fresh worker, the same state
    finally:
        box.close()


def test_hang_and_exit_cost_one_call_and_the_worker_restarts():
    box = Sandbox([ModuleSource("mod", "mod.py", WORKER_SOURCE)], SandboxConfig(call_timeout=1.0))
    box.start()
    student = StudentModules(box, ["mod"])
    try:
        with pytest.raises(WorkerCrashed, match="did not finish within 1 s"):
            student.mod.hang()
        assert student.mod.add(1, 2) == 3
        with pytest.raises(WorkerCrashed, match="exited with status 3"):
            student.mod.leave()
        assert student.mod.add(2, 2) == 4
        assert "hello from import" in box.output()
    finally:
        box.close()


@pytest.mark.skipif(os.name != "posix", reason="Windows pipes cannot be polled: text() gives what was drained")
def test_output_holds_what_was_written_however_far_behind_the_draining_thread_is():
    """The worker writes its prints before it replies; the grader's draining thread may not
    have run yet on a loaded machine (the hang test above once read '' here). Not starting
    the thread at all is the furthest behind it can be."""
    from autograder.sandbox.output import OutputCollector
    read_end, write_end = os.pipe()
    collector = OutputCollector(read_end, limit=8)
    try:
        os.write(write_end, b"hello\n")
        assert collector.text() == "hello\n"
        os.write(write_end, b"0123456789")
        assert collector.text() == "hello\n01\n… (8 more bytes of output not shown)"
    finally:
        os.close(write_end)
    collector.start()
    collector.join(timeout=10)
    assert not collector.is_alive()                  # end of file ends the thread, which closes
    assert collector.text().startswith("hello\n01")


@pytest.mark.skipif(os.name != "posix", reason="Windows pipes cannot be polled: text() gives what was drained")
def test_output_can_be_read_while_a_worker_writes_without_pause():
    """text() reads a bounded amount itself: a pipe that is never empty (a worker writing
    faster than the grader reads, made certain here by reads that always return a full
    chunk) cannot keep it reading."""
    import threading
    from autograder.sandbox.output import OutputCollector

    class NeverEmpty(OutputCollector):
        def _read_chunk(self) -> bytes:
            return b"y" * 65536

    read_end, write_end = os.pipe()
    collector = NeverEmpty(read_end, limit=1000)                  # its thread not started
    texts: list[str] = []
    reader = threading.Thread(target=lambda: texts.append(collector.text()), daemon=True)
    reader.start()
    reader.join(timeout=30)
    os.close(write_end)
    os.close(read_end)
    assert not reader.is_alive(), "text() kept reading a pipe that never empties"
    assert texts[0].startswith("y" * 1000) and "more bytes of output not shown" in texts[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker user and mount namespace need root")
def test_worker_starts_from_a_private_folder_with_path_hooks_on_sys_path():
    """A checkout in a 0700 folder (`mktemp -d`, /root/...) with an editable install: sys.path
    holds a path-hook marker (not a path, resolved against that folder) and folders the worker
    user cannot traverse, one inside another."""
    private = Path(tempfile.mkdtemp(prefix="ag-private-"))          # 0700, like mktemp -d
    try:
        lib = private / "inner" / "lib"
        lib.mkdir(parents=True)
        (private / "inner").chmod(0o700)
        (lib / "helper_mod.py").write_text("VALUE = 41\n")
        code = ("import sys; sys.path[:0] = [sys.argv[1], '__editable__.kit-0.1.finder.__path_hook__']\n"
                "from autograder.sandbox import ModuleSource, Sandbox, StudentModules\n"
                "box = Sandbox([ModuleSource('mod', 'mod.py', 'import helper_mod\\n"
                "def f(): return helper_mod.VALUE + 1\\n')])\n"
                "box.start(); print(box.load_error('mod') or StudentModules(box, ['mod']).mod.f()); box.close()\n")
        done = subprocess.run([sys.executable, "-c", code, str(lib)], cwd=private,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "42", done.stdout + done.stderr[-3000:]
    finally:
        shutil.rmtree(private, ignore_errors=True)


def test_without_root_the_worker_is_still_a_separate_limited_process():
    box = Sandbox([ModuleSource("mod", "mod.py", "import os, resource\n"
                                "def ids(): return os.getpid(), resource.getrlimit(resource.RLIMIT_DATA)[0]\n")],
                  SandboxConfig(isolation="process", memory_mb=256))
    box.start()
    try:
        pid, data_limit = StudentModules(box, ["mod"]).mod.ids()
        assert pid != os.getpid()
        assert 0 < data_limit < 8 * 1024 ** 3
    finally:
        box.close()


# --------------------------------------------------------------------------- intake

def test_intake_finds_files_in_nested_folders_and_zips(tmp_path):
    sol = solution_file("ex1").read_text()
    nested = make_submission(tmp_path / "a", {"deep/er/attention.py": sol, "conftest.py": "raise SystemExit"})
    assert intake.collect(nested, contract.select("ex1")).found["ex1"].origin == "deep/er/attention.py"
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("student/attention.py", sol)
        z.writestr("../evil.py", "x = 1")
    found = intake.collect(archive, contract.select("ex1")).found["ex1"]
    assert found.source == sol and found.origin == "student/attention.py"


def test_intake_reports_missing_files_and_reads_notebooks(tmp_path):
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": ["%matplotlib inline\n", "x = 1\n"]},
                    {"cell_type": "code", "metadata": {"nbgrader": {"solution": True}},
                     "source": ["def softmax(x, axis=-1):\n", "    !echo hi\n", "    return x\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    folder = make_submission(tmp_path, {"attention.ipynb": json.dumps(nb)})
    sub = intake.collect(folder)
    # the unmarked cell is the student's own (nbgrader manages no cell it did not write): it runs
    assert "def softmax" in sub.found["ex1"].source and "x = 1" in sub.found["ex1"].source
    compile(sub.found["ex1"].source, "attention.py", "exec")
    assert "multihead.py was not found" in sub.found["ex3"].problem


def test_banned_apis_are_found_through_aliases():
    source = ("import torch.nn.functional as F\nfrom torch import nn\n"
              "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
              "    return F.scaled_dot_product_attention(Q, K, V), nn.MultiheadAttention\n"
              "def softmax(x, axis=-1):\n    import torch\n    return torch.softmax(x, axis)\n")
    hits = intake.find_banned(source, contract.BY_ID["ex1"])
    assert any("torch.nn.functional.scaled_dot_product_attention" in h for h in hits)
    assert any("torch.nn.MultiheadAttention" in h for h in hits)
    assert any("inside softmax" in h for h in hits)
    assert intake.find_banned(solution_file("ex1").read_text(), contract.BY_ID["ex1"]) == []
    through_helper = ("import torch\ndef _exp(x):\n    return torch.exp(torch.as_tensor(x)).numpy()\n"
                      "def _norm(x):\n    return _exp(x) / _exp(x).sum()\n"
                      "def softmax(x, axis=-1):\n    return _norm(x)\n"
                      "def scaled_dot_product_attention(Q, K, V, mask=None):\n    return torch.ones(1)\n")
    hits = intake.find_banned(through_helper, contract.BY_ID["ex1"])
    assert hits == ["line 3: torch.exp inside _exp, called from _norm (NumPy only)"], hits


@pytest.mark.parametrize("future", [True, False], ids=["postponed", "evaluated"])
def test_a_type_annotation_is_not_a_use(future):
    """The contract forbids *using* torch in the NumPy functions (and using banned APIs):
    naming a type in an annotation runs nothing of it (a blind student's false failure, s25:
    ``mask: np.ndarray | torch.Tensor | None`` cost the banned-API test). What does run stays
    a use: a default value, a decorator, a type check in the body."""
    head = ("from __future__ import annotations\n" if future else "") + \
        "import numpy as np\nimport torch\nfrom torch import nn\n"
    annotated = head + (
        "def softmax(x: np.ndarray | torch.Tensor, axis: int = -1) -> np.ndarray | torch.Tensor:\n"
        "    shifted: torch.Tensor = x - x.max(axis, keepdims=True)\n"
        "    return np.exp(shifted) / np.exp(shifted).sum(axis, keepdims=True)\n"
        "def scaled_dot_product_attention(Q: torch.Tensor, K, V, mask=None) -> nn.MultiheadAttention:\n"
        "    return Q\n")
    assert intake.find_banned(annotated, contract.BY_ID["ex1"]) == []
    running = head + (
        "def softmax(x, axis=-1, eps=torch.finfo(torch.float32).eps):\n    return x\n"
        "def scaled_dot_product_attention_np(Q, K, V, mask=None):\n"
        "    if isinstance(Q, torch.Tensor):\n        raise TypeError('NumPy arrays only')\n    return Q, Q\n")
    assert intake.find_banned(running, contract.BY_ID["ex1"]) == [
        "line %d: torch.finfo inside softmax (NumPy only)" % (5 if future else 4),
        "line %d: torch.Tensor inside scaled_dot_product_attention_np (NumPy only)" % (8 if future else 7)]


def test_bans_hold_where_the_contract_puts_them():
    """The contract: "Not allowed: … in `AttentionClassifier`". A helper the class calls
    (directly or through another) is the class's code; a self-check elsewhere in the file, or
    ``LSTMClassifier``, is not."""
    ex5 = contract.BY_ID["ex5"]
    head = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
    attend = "def _attend(q):\n    return F.scaled_dot_product_attention(q, q, q)\n"
    via = "def _via(q):\n    return _attend(q)\n"

    def classifier(body: str) -> str:
        return f"class AttentionClassifier(nn.Module):\n    def classify(self, x):\n        return {body}\n"

    elsewhere = (head + attend + classifier("x") + "def check_against_pytorch(q):\n    return _attend(q)\n"
                 "class LSTMClassifier(nn.Module):\n    def classify(self, x):\n"
                 "        return nn.MultiheadAttention(4, 1)(x, x, x)[0]\n")
    assert intake.find_banned(elsewhere, ex5) == []
    assert intake.find_banned(head + classifier("F.scaled_dot_product_attention(x, x, x)"), ex5) == [
        "line 6: torch.nn.functional.scaled_dot_product_attention"]
    assert intake.find_banned(head + attend + via + classifier("_via(x)"), ex5) == [
        "line 5: torch.nn.functional.scaled_dot_product_attention"]
    assert intake.find_banned(head + classifier("torch.ops.aten.scaled_dot_product_attention(x, x, x)"), ex5)
    assert intake.find_banned(solution_file("ex5").read_text(), ex5) == []
    # ex3 bans them in the whole file, as its contract says, but for a self-check that never
    # runs when graded (the module is imported, not run as __main__)
    assert intake.find_banned(head + attend, contract.BY_ID["ex3"]) == [
        "line 5: torch.nn.functional.scaled_dot_product_attention"]
    main = 'if __name__ == "__main__":\n    print(nn.MultiheadAttention(4, 1))\n'
    assert intake.find_banned(head + main, contract.BY_ID["ex3"]) == []
    assert intake.find_banned(head + main.replace('__name__ == "__main__"', '"__main__" == __name__'),
                              contract.BY_ID["ex3"]) == []
    assert intake.find_banned(head + main.replace("__main__", "not_main"), contract.BY_ID["ex3"]) == [
        "line 5: torch.nn.MultiheadAttention"]


# --------------------------------------------------------------------------- results

def test_results_validate_and_are_written_atomically(tmp_path):
    path = tmp_path / "out" / "results.json"
    results.write_atomic(path, results.placeholder("started"))
    results.validate(json.loads(path.read_text()))
    r = results.Results(tests=[results.TestResult("ex1", "x" * 10, 2.0, output="y" * 500_000)])
    data = r.to_json()
    results.validate(data)
    assert len(data["tests"][0]["output"]) <= results.TEST_OUTPUT_LIMIT
    with pytest.raises(jsonschema.ValidationError):
        results.validate({"score": 1, "tests": [{"name": "t", "status": "ok"}]})
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_the_suites_fixtures_use_no_pytest_api_due_for_removal():
    """The suites' fixtures (student, support, submission) were methods of the plugin
    instance, which pytest 9 deprecates for session scope and pytest 10 removes: with that
    warning made an error, a correct ex1 must still get full marks."""
    outcome = grade_folder(solution_file("ex1").parent, "ex1",
                           pytest_extra=("-W", "error::pytest.PytestRemovedIn10Warning"))
    assert outcome.tests and outcome.score == 20, [t.output for t in outcome.tests if not t.passed][:2]


def test_grading_the_same_submission_twice_is_identical(tmp_path):
    folder = make_submission(tmp_path, {"attention.py": solution_file("ex1"),
                                        "causal.py": "def create_causal_mask(:"})
    first = grade_folder(folder, "ex1,ex4", results_path=tmp_path / "r1.json")
    second = grade_folder(folder, "ex1,ex4", results_path=tmp_path / "r2.json")
    def strip(path):              # timings are not results: the run's and each exercise's
        data = {k: v for k, v in json.loads(path.read_text()).items() if k != "execution_time"}
        for entry in data.get("extra_data", {}).get("exercises", []):
            entry.pop("seconds", None)
        return data
    assert strip(tmp_path / "r1.json") == strip(tmp_path / "r2.json")
    assert first.by_exercise()["ex1"][0] == first.by_exercise()["ex1"][1] > 0
    assert second.by_exercise()["ex4"][0] == 0
    assert "causal.py has a syntax error on line 1" in first.output
    results.validate(json.loads((tmp_path / "r1.json").read_text()))


def test_failed_tests_cost_no_traceback_rendering(tmp_path, monkeypatch):
    """A failure's result comes from its exception (its message, the cause it names), never
    from pytest's own report of it: the report's traceback, which reads and parses the source
    of every frame of every failed test (two seconds of a stub's grading), is not made. The
    stub of ex1 fails every test, each with the stub's message, and no frame's source is read."""
    from _pytest._code.code import TracebackEntry
    from helpers import stub_source

    read = []
    real = TracebackEntry.getsource
    monkeypatch.setattr(TracebackEntry, "getsource", lambda self, *a, **k: read.append(self) or real(self, *a, **k))
    outcome = grade_folder(make_submission(tmp_path, {"attention.py": stub_source("ex1")}), "ex1")
    assert outcome.tests and not any(t.passed for t in outcome.tests)
    assert all("NotImplementedError" in t.output or "not implemented" in t.output.lower() for t in outcome.tests), \
        [t.output for t in outcome.tests][:3]
    assert read == []


# --------------------------------------------------------------------------- a sandbox that cannot start


class _Refusing:
    """Wraps the backend ``startup.choose`` gives: its first ``fail`` checks before a worker
    starts raise SandboxStartError (as the user level does when the worker user cannot read
    the interpreter), counted."""

    def __init__(self, backend, fail: int):
        self._backend, self._fail, self.checks = backend, fail, 0

    def check_files(self):
        self.checks += 1
        if self.checks <= self._fail:
            from autograder.sandbox.errors import SandboxStartError
            raise SandboxStartError("the worker user cannot read the interpreter's files (a test)")
        return self._backend.check_files()

    def __getattr__(self, name):
        return getattr(self._backend, name)


@pytest.mark.parametrize("fail", [2, 1])
def test_a_sandbox_that_cannot_start_is_the_graders_problem_not_the_students(tmp_path, monkeypatch, fail):
    """A worker that cannot be set up (SandboxStartError) is not the student's fault: each of
    that exercise's tests says it did not run and why, never "check return types"; the
    exercise is ``not_run`` (not ``graded`` with zero); the machine is probed once per
    exercise, not once per test; the next exercise tries afresh (``fail=1``: ex1 could not
    start, ex3 is graded in full); and ``grade`` exits 3 when anything was not run."""
    from autograder import cli, grading
    from autograder.sandbox import startup

    made: list[_Refusing] = []
    choose = startup.choose

    def refusing(*args, **kwargs):
        made.append(_Refusing(choose(*args, **kwargs), fail))
        return made[-1]
    monkeypatch.setattr(startup, "choose", refusing)
    sub = make_submission(tmp_path, {"attention.py": solution_file("ex1"), "multihead.py": solution_file("ex3")})
    outcome = grade_folder(sub, "ex1,ex3")
    fates = {o.exercise: o for o in outcome.exercises}
    assert fates["ex1"].status is results.ExerciseStatus.NOT_RUN and fates["ex1"].score == 0
    assert "cannot read the interpreter's files (a test)" in fates["ex1"].message
    ex1 = [t for t in outcome.tests if t.exercise == "ex1"]
    assert ex1 and all("did not run" in t.output and "not a problem with your code" in t.output
                       and "Check return types" not in t.output for t in ex1), ex1[0].output
    if fail == 1:
        assert (fates["ex3"].status, fates["ex3"].score) == (results.ExerciseStatus.GRADED, 20)
    else:
        assert fates["ex3"].status is results.ExerciseStatus.NOT_RUN
    assert made[0].checks == 2                         # once per exercise, however many tests
    results_path = tmp_path / "results.json"
    code = cli.main(["grade", str(sub), "--exercises", "ex1", "--results", str(results_path),
                     "--worker-user", worker_user("engine")])
    assert code == cli.NOT_GRADED_EXIT
    assert json.loads(results_path.read_text())["extra_data"]["exercises"][0]["status"] == "not_run"


def test_a_notebook_that_takes_too_long_to_import_is_named_with_its_cells(tmp_path):
    """A notebook's code cells all run when it is imported: the message names the notebook,
    not a .py the student never wrote, and says why a demo at the top level counts."""
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": solution_file("ex1").read_text()},
             {"cell_type": "code", "metadata": {}, "outputs": [],
              "source": "import time\nwhile True:\n    time.sleep(0.05)   # a demo that never ends\n"}]
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "attention.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                     "nbformat_minor": 5}))
    outcome = grade_folder(sub, "ex1", load_timeout=2.0)
    (fate,) = outcome.exercises
    assert fate.score == 0 and "importing attention.ipynb (its code cells, run top to bottom) failed" in fate.message
    assert "every code cell runs when the notebook is graded" in fate.message and "attention.py" not in fate.message
    failed = [t for t in outcome.tests if not t.passed]
    assert failed and all("attention.ipynb" in t.output and "attention.py" not in t.output for t in failed), \
        "each test's own message names the notebook too"


def _notebook(folder: Path, name: str, sources: list[str]) -> Path:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
             for s in sources]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return folder


def test_a_notebook_cell_that_raises_ends_that_cell_only_as_nbgrader_runs_it(tmp_path):
    """A notebook with a demo of the required ValueError, or a half-finished cell, between its
    definitions: each cell runs on its own, as nbgrader runs a notebook, so every definition is
    graded (full marks), and the exercise's message names the first error and where it was."""
    solution = solution_file("ex3").read_text()
    head, tail = solution.split("\nclass MultiHeadAttention", 1)
    demo = "MultiHeadAttention(10, 3)   # raises ValueError: 10 is not divisible by 3\n"
    half = "def helper():\n    return 1\nraise RuntimeError('a half-finished cell')\nnever_defined = 1\n"
    outcome = grade_folder(_notebook(tmp_path / "nb", "multihead.ipynb",
                                     [head, half, "class MultiHeadAttention" + tail, demo]), "ex3")
    (fate,) = outcome.exercises
    assert (fate.status, fate.score) == (results.ExerciseStatus.GRADED, fate.max_score), fate.message
    assert "a code cell raised RuntimeError: a half-finished cell" in fate.message
    assert "raise RuntimeError('a half-finished cell')" in fate.message and "other cells ran" in fate.message


def test_a_notebook_gets_back_what_ipython_magics_give(tmp_path):
    """Values a later cell uses come back as IPython gives them: `%time` runs its statement,
    `%%capture name` captures what its body prints, `%pwd` and `!cmd` give a folder and lines."""
    solution = solution_file("ex3").read_text()
    cells = ["gpu_info = !nvidia-smi\ngpu_info = '\\n'.join(gpu_info)\nif gpu_info.find('failed') >= 0:\n    print('no GPU')\n",
             "%%capture cap\nprint('captured line')\n",
             solution,
             "%time layer = MultiHeadAttention(8, 2)\n",
             "here = %pwd\nassert isinstance(here, str) and layer.num_heads == 2\n",
             "assert cap.stdout.splitlines()[0] == 'captured line'\n"]
    outcome = grade_folder(_notebook(tmp_path / "nb", "multihead.ipynb", cells), "ex3")
    (fate,) = outcome.exercises
    assert (fate.status, fate.score, fate.message) == (results.ExerciseStatus.GRADED, fate.max_score, "")


def test_a_py_file_that_raises_at_import_is_still_an_import_error(tmp_path):
    """Cells that run on their own are a notebook's only: a .py file that raises at import is not graded."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "multihead.py").write_text(solution_file("ex3").read_text() + "\nMultiHeadAttention(10, 3)\n")
    (fate,) = grade_folder(sub, "ex3").exercises
    assert fate.status is results.ExerciseStatus.IMPORT_ERROR and fate.score == 0
