"""Warm graders: nothing of one student is visible while the next is graded.

One warm grader (``--jobs 1``) grades, in this order:

* ``a_plant``: the ex1 solution that, when imported, leaves every trace it can: files in
  /tmp, /dev/shm, its home and working folders, an environment variable, a ``sys.modules``
  entry, attributes on numpy and torch, a thread and processes left running, torch's default
  dtype, thread count and seed;
* ``b_detect``: the solution that looks for each of those traces when imported and refuses to
  import (score 0, the traces named in its message) if it finds any: it must get full marks;
* ``c_control``: plants then looks in the same import, so the detector is shown to see the
  traces (score 0, every kind named).

At the namespaces level (root's default here) and at ``--isolation user``.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder import batch, contract
from autograder.sandbox import landlock
from helpers import kit_modes_restored

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = (ROOT / "solutions" / "ex1_attention" / "attention.py").read_text()
EX1 = contract.select("ex1")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.geteuid() != 0, reason="the worker user needs root")]

TRACE = "agtrace7c1"
PLANT = f'''
def _plant():
    import os, subprocess, sys, threading, time
    import numpy, torch
    for folder in ("/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd()):
        try:
            with open(os.path.join(folder, "{TRACE}"), "w") as handle:
                handle.write("x")
        except OSError:
            pass
    os.environ["{TRACE}"] = "1"
    sys.modules["{TRACE}"] = sys
    numpy.{TRACE} = torch.{TRACE} = 1
    threading.Thread(target=time.sleep, args=(300,), name="{TRACE}", daemon=True).start()
    try:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{TRACE}"],
                         start_new_session=True)
    except Exception:
        pass
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(3)
    torch.manual_seed(7654321)
_plant()
'''
DETECT = f'''
def _traces():
    import os, sys, threading
    import numpy, torch
    found = []
    for folder in ("/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd()):
        if os.path.exists(os.path.join(folder, "{TRACE}")):
            found.append("file in [" + folder + "]")
    if "{TRACE}" in os.environ:
        found.append("environment")
    if "{TRACE}" in sys.modules:
        found.append("sys.modules")
    if hasattr(numpy, "{TRACE}") or hasattr(torch, "{TRACE}"):
        found.append("module globals")
    if any(t.name == "{TRACE}" for t in threading.enumerate()):
        found.append("thread")
    try:
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/" + pid + "/cmdline", "rb") as handle:
                    if b"{TRACE}" in handle.read():
                        found.append("process")
                        break
            except OSError:
                pass
    except OSError:
        pass
    if torch.get_default_dtype() != torch.float32:
        found.append("default dtype")
    if torch.get_num_threads() == 3:
        found.append("num threads")
    if torch.initial_seed() == 7654321:
        found.append("seed")
    return found
_FOUND = _traces()
if _FOUND:
    raise RuntimeError("traces of another submission: " + "; ".join(_FOUND))
'''
KINDS = ("file in [/tmp]", "file in [/dev/shm]", "environment", "sys.modules", "module globals", "thread",
         "default dtype", "num threads", "seed")


@pytest.fixture
def class_folder():
    folder = Path(tempfile.mkdtemp(prefix="ag-warm-class-"))
    os.chmod(folder, 0o755)
    for name, source in (("a_plant", SOLUTION + PLANT), ("b_detect", SOLUTION + DETECT),
                         ("c_control", SOLUTION + PLANT + DETECT)):
        (folder / name).mkdir()
        (folder / name / "attention.py").write_text(source)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
    for place in ("/tmp", "/dev/shm"):
        Path(place, TRACE).unlink(missing_ok=True)


def _grade_pair(class_folder: Path, out: Path, level: str, **kwargs) -> dict:
    rows, _ = batch.run_batch(class_folder, out / "grades.csv", EX1, jobs=1, progress=False, warm=True,
                              student_timeout=300, **kwargs)
    table = {r.entry.key: r for r in rows}
    for key in table:
        data = json.loads((out / "results" / key / "results.json").read_text())
        assert data["extra_data"]["isolation"] == level, data["output"]
    control = (out / "results" / "c_control" / "results.json").read_text()
    assert table["c_control"].total == 0
    kinds = KINDS
    if level == "user" and landlock.abi() >= 1:      # Landlock: it cannot even plant a file there
        kinds = tuple(k for k in KINDS if k not in ("file in [/tmp]", "file in [/dev/shm]"))
        assert "file in [/tmp]" not in control and "file in [/dev/shm]" not in control
    missing = [kind for kind in kinds if kind not in control]
    assert not missing, f"the detector does not see: {missing}"
    detect = json.loads((out / "results" / "b_detect" / "results.json").read_text())
    assert table["b_detect"].total == 20, detect["output"]
    return table


def test_nothing_leaks_between_submissions_namespaces(class_folder, tmp_path):
    from autograder.sandbox import levels
    if levels.detect()[0] != "namespaces":
        pytest.skip("namespaces are not available here")
    _grade_pair(class_folder, tmp_path, "namespaces")


def test_nothing_leaks_between_submissions_user_level(class_folder, tmp_path, monkeypatch,
                                                     outside_python_path):
    monkeypatch.setenv("AUTOGRADER_ISOLATION", "user")
    with kit_modes_restored():
        _grade_pair(class_folder, tmp_path, "user", python=str(outside_python_path))


def test_crashed_warm_grader_is_replaced(tmp_path, monkeypatch):
    """The warm grader is SIGKILLed while grading the first submission: that one becomes a zero
    row saying why, a new warm grader grades the others."""
    import signal
    import time

    from autograder.batching import pool

    subs = tmp_path / "subs"
    # "a" is still importing when the kill comes (a second after its grader starts): on a
    # quiet machine a plain ex1 can finish inside that second and keep its 20 points (CI saw it)
    slow = SOLUTION + "\nimport time as _slow\n_slow.sleep(30)\n"
    for name, text in (("a", slow), ("b", SOLUTION)):
        (subs / name).mkdir(parents=True)
        (subs / name / "attention.py").write_text(text)
    send, killed = pool.WarmGrader.send, []

    def send_then_kill(self, request):
        send(self, request)
        if not killed:
            killed.append(self.proc.pid)
            deadline = time.monotonic() + 120
            while self._queue(int(request["job"])).empty() and time.monotonic() < deadline:   # its grader began
                time.sleep(0.05)
            time.sleep(1.0)
            os.killpg(self.proc.pid, signal.SIGKILL)

    monkeypatch.setattr(pool.WarmGrader, "send", send_then_kill)
    rows, _ = batch.run_batch(subs, tmp_path / "out" / "grades.csv", EX1, jobs=1, progress=False, warm=True)
    table = {r.entry.key: r for r in rows}
    assert killed
    assert (table["a"].status, table["a"].total) == ("error", 0), table["a"].reason
    assert "warm grader process ended" in table["a"].reason
    assert (table["b"].status, table["b"].total) == ("ok", 20), table["b"].reason
