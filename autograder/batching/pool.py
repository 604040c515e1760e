"""The batch's local pool of warm graders (:mod:`autograder.batching.warm`): one per job slot.

Each slot keeps what it had with one ``grade`` subprocess per student: its own worker user
(process limits count per user) and its own memory group (now the slot's: the warm grader and
the graders it forks live in it), and each student is still graded by a fresh grader process
running ``grade``'s code, in its own session. Submissions reach a warm grader over a pipe as
``grade``'s arguments and an opaque job number; its output goes to a file in the batch's
private staging folder and becomes ``grade.log`` as before.

A grader that runs past ``--student-timeout`` gets SIGINT, then SIGKILL (its process group);
a warm grader that dies, or does not answer after that, is killed and replaced, and the
submission it was grading becomes a zero row with the reason (:meth:`Runner._read`).
"""
from __future__ import annotations

import itertools
import json
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

from autograder.jsontypes import JSONObject
from autograder.sandbox import lifetime

KILL_GRACE = 5.0
START_TIMEOUT = 300.0            # a warm grader's own start-up (torch, pytest) on a busy machine


class WarmGraderGone(RuntimeError):
    """The warm grader ended or stopped answering."""


class WarmGrader:
    """One long-lived ``python -m autograder.batching.warm`` process and its replies."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path, errors: Path):
        self.errors = errors
        with open(errors, "ab") as err:
            self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        self.replies: queue.Queue[dict | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="warm-replies").start()
        self.grader_pid: int | None = None

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.replies.put(json.loads(line))
            except ValueError:
                continue
        self.replies.put(None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, request: JSONObject) -> None:
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise WarmGraderGone("its pipe is closed") from None

    def reply(self, job: int, key: str, timeout: float) -> dict | None:
        """The reply carrying ``key`` for ``job``; None on timeout; raises when the process ended."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            try:
                message = self.replies.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if message is None:
                self.replies.put(None)
                raise WarmGraderGone(f"exit code {self.proc.wait()}")
            if message.get("job") == job and key in message:
                return message
            if time.monotonic() > deadline:
                return None

    def signal_grader(self, sig: int) -> None:
        lifetime.signal_group(self.grader_pid, sig)

    def kill(self) -> None:
        lifetime.kill_groups(*(p for p in (self.grader_pid, self.proc.pid) if p))
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=KILL_GRACE)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class WarmPool:
    """Warm graders by worker user (job slot); used by :meth:`autograder.batching.runner.Runner.execute`."""

    def __init__(self, runner) -> None:
        self.runner = runner
        self.graders: dict[str, WarmGrader] = {}
        self.groups: dict[str, Path | None] = {}
        self.jobs = itertools.count(1)
        self.lock = threading.Lock()
        self.exercises = ",".join(ex.id for ex in runner.exercises)

    def _grader(self, worker_user: str) -> WarmGrader:
        grader = self.graders.get(worker_user)
        if grader is not None and grader.alive():
            return grader
        if grader is not None:
            grader.kill()
        runner = self.runner
        if worker_user not in self.groups:
            self.groups[worker_user] = runner.memory.create(f"warm-{len(self.groups) + 1}")
        command = runner.memory.wrap([runner.python, "-m", "autograder.batching.warm",
                                      "--exercises", self.exercises], self.groups[worker_user])
        grader = WarmGrader(command, runner.environment(), runner.stage_root,
                            runner.stage_root / f"warm-{len(self.graders) + 1}.err")
        self.graders[worker_user] = grader
        return grader

    def execute(self, key: str, job_file: Path, worker_user: str) -> tuple[int, bytes, bool]:
        """Grade job ``key`` (its opaque job file) with the slot's warm grader:
        ``(code, output, timed out)``."""
        runner = self.runner
        job = next(self.jobs)
        log = runner.stage_root / f"job-{job}.log"
        argv = runner.command(job_file, worker_user)[3:]    # after `python -m autograder`
        folder = runner.stage_root / key
        timed_out, code, note = False, -1, ""
        with self.lock:
            grader = self._grader(worker_user)
        try:
            grader.send({"job": job, "argv": argv, "cwd": str(folder), "log": str(log)})
            begun = grader.reply(job, "pid", START_TIMEOUT)
            if begun is None:
                raise WarmGraderGone("it did not start a grader")
            grader.grader_pid = int(begun["pid"])
            started = time.monotonic()
            done = grader.reply(job, "code", runner.student_timeout - (time.monotonic() - started))
            if done is None:
                timed_out = True
                for sig in (signal.SIGINT, signal.SIGKILL):
                    grader.signal_grader(sig)
                    done = grader.reply(job, "code", KILL_GRACE)
                    if done is not None:
                        break
                if done is None:
                    raise WarmGraderGone("it did not answer after its grader was stopped")
            code = int(done["code"])
        except WarmGraderGone as exc:
            note = f"\nthe warm grader process ended or stopped answering ({exc}) while grading this submission\n"
            grader.kill()
        finally:
            grader.grader_pid = None
        try:
            output = log.read_bytes()
            log.unlink()
        except OSError:
            output = b""
        return code, output + note.encode(), timed_out

    def stop_all(self) -> None:
        for grader in list(self.graders.values()):
            grader.signal_grader(signal.SIGINT)

    def close(self) -> None:
        for grader in self.graders.values():
            grader.close()
        for group in self.groups.values():
            self.runner.memory.remove(group)
