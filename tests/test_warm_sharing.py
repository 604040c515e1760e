"""A warm grader (``python -m autograder.batching.warm``, one per ``batch`` job slot) shares
what it preloaded with every grader it forks: it freezes its objects before it serves, so a
forked grader's garbage collection does not walk them and so does not copy the pages that
hold them (a copy per grader otherwise: ~18,000 pages, 70 MB, 0.2 s of CPU each).

The warm grader's own ``main`` runs in a subprocess with its request loop replaced by one fork,
as the loop forks a grader; the child counts the page faults of a full collection. The control
run skips the freeze, so the test is seen to measure the copies it forbids.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="warm graders fork (Linux)")
def test_a_forked_graders_collection_copies_nothing_the_warm_grader_loaded():
    frozen, control = _fork_once("frozen"), _fork_once("control")
    assert control["frozen"] == 0 and control["copied"] > 5_000, control      # what the freeze spares
    assert frozen["frozen"] > 100_000, frozen                                  # torch's objects, and more
    assert frozen["copied"] < 500, frozen
