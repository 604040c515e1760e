"""``autograder.process_exit``: a command's process ends as a normal exit would, minus the
interpreter's teardown (0.2–0.5 s of CPU once torch is loaded)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import ROOT, grader_env

PROGRAM = textwrap.dedent("""\
    import atexit, sys, threading, time
    from pathlib import Path
    from autograder.process_exit import exit_process

    out = Path(sys.argv[1])

    class Teardown:
        def __del__(self):                       # runs only in the interpreter's teardown
            out.joinpath("teardown").write_text("ran")

    kept = Teardown()
    atexit.register(lambda: out.joinpath("atexit").write_text("ran"))
    if sys.argv[2] == "thread":                  # a worker thread still busy: it must finish
        threading.Thread(target=lambda: (time.sleep(0.5), out.joinpath("thread").write_text("done"))).start()
    print("unflushed", end="")                   # still in the buffer: a pipe is block-buffered
    exit_process(3)
""")


def _run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path), mode], env=grader_env(),
                          capture_output=True, text=True, timeout=60)


def test_exit_process_runs_atexit_flushes_and_skips_the_teardown(tmp_path):
    done = _run(tmp_path, "plain")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "unflushed"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()          # the interpreter's teardown was skipped


def test_exit_process_waits_for_a_running_thread_as_a_normal_exit_does(tmp_path):
    done = _run(tmp_path, "thread")
    assert done.returncode == 3, done.stderr
    assert (tmp_path / "thread").read_text() == "done"
    assert done.stdout == "unflushed" and (tmp_path / "atexit").read_text() == "ran"


def test_a_grade_ends_without_the_teardown(tmp_path):
    """``python -m autograder grade``, run as ``-m`` runs it: its results are complete and the
    process ends through :func:`exit_process` with no other thread running (the fast way)."""
    spy = textwrap.dedent("""\
        import runpy, sys
        import autograder.process_exit as process_exit
        real = process_exit._others_running
        def spied():
            running = real()
            print(f"others running: {running}", file=sys.stderr)
            return running
        process_exit._others_running = spied
        sys.argv = ["autograder", *sys.argv[1:]]
        runpy.run_module("autograder", run_name="__main__", alter_sys=True)
    """)
    results = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-c", spy, "grade", str(ROOT / "solutions"), "--exercises", "ex1",
                           "--results", str(results)], cwd=tmp_path, env=grader_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "others running: False" in done.stderr, done.stderr[-3000:]
    assert json.loads(results.read_text(encoding="utf-8"))["score"] == 20
