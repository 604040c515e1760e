"""The warm CLI (``warm_cli.run``) stands in for ``python -m autograder`` in many tests: it must
give what a real process gives (exit status, standard streams, results.json), and a real
process must still be what runs when the command is not this Python's ``-m autograder``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import warm_cli
from helpers import grade_command, grader_env, make_submission, solution

BUGGY_EX1 = solution("ex1").replace("/ np.sqrt(d_k)", "/ d_k", 1)


def _both(args: list[str], cwd, env) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    warm = warm_cli.run(args, cwd=cwd, env=env, timeout=300, text=True)
    cold = subprocess.run(args, cwd=cwd, env=env, timeout=300, text=True, capture_output=True,
                          stdin=subprocess.DEVNULL)
    return warm, cold


def test_a_warm_grading_equals_a_real_process(tmp_path):
    assert BUGGY_EX1 != solution("ex1"), "the mutation no longer applies to the solution"
    submission = make_submission(tmp_path / "sub", {"attention.py": BUGGY_EX1})
    work = tmp_path / "cwd"
    work.mkdir()
    runs = {}
    for name in ("warm", "cold"):
        results_path = tmp_path / name / "results.json"
        args = grade_command(submission, results_path, "--exercises", "ex1")
        proc = (warm_cli.run(args, cwd=work, env=grader_env(), timeout=300, text=True) if name == "warm" else
                subprocess.run(args, cwd=work, env=grader_env(), timeout=300, text=True, capture_output=True))
        runs[name] = (proc, json.loads(results_path.read_text(encoding="utf-8")))
    (warm, warm_data), (cold, cold_data) = runs["warm"], runs["cold"]
    assert warm.returncode == cold.returncode == 0, (warm.stderr[-2000:], cold.stderr[-2000:])
    assert 0 < warm_data["score"] < 20, warm_data["score"]

    def verdicts(data: dict) -> list[tuple]:
        return [(t["name"], t["score"], t["output"]) for t in data["tests"]]
    assert verdicts(warm_data) == verdicts(cold_data)
    assert warm.stdout == cold.stdout


@pytest.mark.parametrize("argv, code, words", [
    (["grade", "somewhere", "--exercises", "ex9"], 2, "ex9"),
    (["grade", "-h"], 0, "--exercises"),
    (["no-such-command"], 2, "invalid choice"),
])
def test_exit_status_and_streams_as_a_real_process(tmp_path, argv, code, words):
    warm, cold = _both([sys.executable, "-m", "autograder", *argv], tmp_path, grader_env())
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.returncode == code and words in warm.stdout + warm.stderr


def test_the_working_folder_and_environment_are_the_callers(tmp_path):
    """``--results`` relative to the caller's working folder; TMPDIR read again per command."""
    tmp = tmp_path / "own-tmp"
    tmp.mkdir()
    submission = make_submission(tmp_path / "sub", {"attention.py": solution("ex1")})
    env = grader_env() | {"TMPDIR": str(tmp)}
    proc = warm_cli.run([sys.executable, "-m", "autograder", "grade", str(submission), "--exercises", "ex1",
                         "--results", "rel/results.json"], cwd=tmp_path, env=env, timeout=300, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "rel" / "results.json").read_text())["score"] == 20


def test_a_timeout_kills_the_command(tmp_path):
    code = "import time; time.sleep(60)"
    # a command that is not `-m autograder` runs as a real process: the timeout is subprocess's
    with pytest.raises(subprocess.TimeoutExpired):
        warm_cli.run([sys.executable, "-c", code], cwd=tmp_path, timeout=1)
    # a forked one: the grader stopped (SIGKILL) once the caller's timeout passes
    slow = make_submission(tmp_path / "slow", {"attention.py": "import time\ntime.sleep(60)\n"})
    with pytest.raises(subprocess.TimeoutExpired):
        warm_cli.run(grade_command(slow, tmp_path / "r.json", "--exercises", "ex1", "--import-timeout", "50"),
                     cwd=tmp_path, env=grader_env(), timeout=3)


def test_other_commands_are_real_processes(monkeypatch, tmp_path):
    monkeypatch.delenv(warm_cli.COLD_ENV, raising=False)
    assert not warm_cli._forkable([sys.executable, "-c", "print(1)"])
    assert not warm_cli._forkable(["setpriv", "--reuid=65534", sys.executable, "-m", "autograder", "grade"])
    assert warm_cli._forkable([sys.executable, "-m", "autograder", "grade"])
    # an interpreter without torch: its server cannot start, the command runs as a real process
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho from-a-real-process\n")
    fake.chmod(0o755)
    assert warm_cli._forkable([str(fake), "-m", "autograder", "grade"])
    done = warm_cli.run([str(fake), "-m", "autograder", "grade"], cwd=tmp_path, timeout=60, text=True)
    assert done.stdout == "from-a-real-process\n"
    monkeypatch.setenv(warm_cli.COLD_ENV, "1")
    assert not warm_cli._forkable([sys.executable, "-m", "autograder", "grade"])
