"""A warm grader (``python -m autograder.batching.warm``, shared by a ``batch``'s job slots) shares
what it preloaded with every grader it forks: it freezes its objects before it serves, so a
forked grader's garbage collection does not walk them and so does not copy the pages that
hold them (a copy per grader otherwise: ~18,000 pages, 70 MB, 0.2 s of CPU each).

The warm grader's own ``main`` runs in a subprocess with its request loop replaced by one fork,
as the loop forks a grader; the child counts the page faults of a full collection. The control
run skips the freeze, so the test is seen to measure the copies it forbids.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder import batch, contract, jobs
from autograder.batching import pool
from helpers import solution, write_submission

ROOT = Path(__file__).resolve().parents[1]

FORK_ONCE = r'''
import gc, json, os, resource, sys
from autograder.batching import warm

if sys.argv[1] == "control":
    warm.freeze = lambda: None


def serve(requests, reply_fd):          # the request loop, reduced to its fork of one grader
    frozen = gc.get_freeze_count()
    read, write = os.pipe()
    if os.fork() == 0:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        gc.collect()
        os.write(write, str(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before).encode())
        os._exit(0)
    os.wait()
    os.write(reply_fd, json.dumps({"frozen": frozen, "copied": int(os.read(read, 64))}).encode())
    return 0


warm.serve = serve
sys.exit(warm.main(["--exercises", "ex1"]))
'''


def _fork_once(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", FORK_ONCE, mode], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="warm graders fork (Linux)")
def test_a_forked_graders_collection_copies_nothing_the_warm_grader_loaded():
    frozen, control = _fork_once("frozen"), _fork_once("control")
    assert control["frozen"] == 0 and control["copied"] > 5_000, control      # what the freeze spares
    assert frozen["frozen"] > 100_000, frozen                                  # torch's objects, and more
    assert frozen["copied"] < 500, frozen


def _memory_group(pid: int) -> str:
    """The memory cgroup of ``pid`` as /proc/<pid>/cgroup names it (v1's memory line, or v2's)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return next((ln for ln in lines if ":memory:" in ln), next((ln for ln in lines if ln.startswith("0::")), ""))


SLOW_EX1 = "\nimport time as _slow\n_slow.sleep(3)\n"       # each grading lasts long enough to overlap


@pytest.mark.skipif(not hasattr(os, "fork"), reason="warm graders fork (Linux)")
def test_one_warm_grader_serves_every_slot_at_once_each_job_in_its_own_memory_group(tmp_path, monkeypatch):
    """``--jobs 2``: one warm grader is started (its imports loaded once), both students'
    graders are its children and run at the same time, and each grader joins a memory group
    of its own (where the machine has one: ``jobs.MemoryGroups``)."""
    subs = tmp_path / "class"
    for name in ("ann", "bob"):
        write_submission(subs / name, {"attention.py": solution("ex1") + SLOW_EX1})
    started, seen, lock = [], {}, threading.Lock()
    init, reply = pool.WarmGrader.__init__, pool.WarmGrader.reply

    def counted_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        started.append(self.proc.pid)

    def watched_reply(self, job, key, timeout):
        message = reply(self, job, key, timeout)
        if message is not None and key == "pid":
            pid, warm_group = int(message["pid"]), _memory_group(self.proc.pid)
            group, deadline = warm_group, time.monotonic() + 5
            while group == warm_group and time.monotonic() < deadline:   # it joins its group first thing
                time.sleep(0.02)
                group = _memory_group(pid)
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            with lock:
                seen[job] = {"parent": ppid, "group": group, "warm_group": warm_group, "began": time.monotonic()}
        elif message is not None and key == "code":
            with lock:
                seen[job]["ended"] = time.monotonic()
        return message

    monkeypatch.setattr(pool.WarmGrader, "__init__", counted_init)
    monkeypatch.setattr(pool.WarmGrader, "reply", watched_reply)
    rows, _ = batch.run_batch(subs, tmp_path / "out" / "grades.csv", contract.select("ex1"), jobs=2,
                              progress=False, student_timeout=240)
    assert [r.total for r in rows] == [20.0, 20.0], [r.reason for r in rows]
    assert len(started) == 1, started                                      # one warm grader for both slots
    first, second = sorted(seen.values(), key=lambda s: s["began"])
    assert first["parent"] == second["parent"] == started[0]
    assert second["began"] < first["ended"], seen                           # graded at the same time
    if jobs.MemoryGroups(1024).kind is not None:
        assert first["group"] != second["group"], seen                     # a group each,
        assert first["warm_group"] not in (first["group"], second["group"]), seen   # not the warm grader's


def test_a_warm_grader_given_no_job_is_stopped_at_once_one_given_jobs_ends_by_itself(tmp_path):
    """``batch`` starts its warm grader before it stages anything, so that it loads meanwhile.
    When no job comes (every result kept from an earlier run), closing it does not wait for it
    to finish loading; a warm grader that was given jobs is closed by the end of its input and
    ends by itself (its graders finish)."""
    loading = pool.WarmGrader([sys.executable, "-c", "import time; time.sleep(120)"], dict(os.environ), tmp_path,
                              tmp_path / "loading.err")
    started = time.monotonic()
    loading.close()
    assert loading.proc.poll() is not None and time.monotonic() - started < pool.KILL_GRACE / 2   # not waited for

    serving = pool.WarmGrader([sys.executable, "-c", "import sys; sys.stdin.read()"], dict(os.environ), tmp_path,
                              tmp_path / "serving.err")
    serving.send({"job": 1, "argv": [], "cwd": str(tmp_path), "log": str(tmp_path / "log"), "group": None})
    serving.close()
    assert serving.proc.returncode == 0
