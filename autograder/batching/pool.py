"""The batch's local pool of warm graders (:mod:`autograder.batching.warm`): one for every job slot.

One warm grader loads what every grader needs once, and forks a fresh grader per student,
several at once (one per busy slot). Each slot keeps what it had with one ``grade`` subprocess
per student: its own worker user (process limits count per user; in ``grade``'s arguments)
and its own memory group per job (created here, joined by the forked grader before it does
anything; the warm grader itself, which never runs student code, is in none). Each student is
still graded by a fresh grader process running ``grade``'s code, in its own session.
Submissions reach the warm grader over a pipe as ``grade``'s arguments and an opaque job
number; its output goes to a file in the batch's private staging folder and becomes
``grade.log`` as before.

A grader that runs past ``--student-timeout`` gets SIGINT, then SIGKILL (its process group).
A warm grader that dies, or does not answer about a grader it was told to stop, is killed
and replaced; each submission it was grading becomes a zero row with the reason
(:meth:`Runner._read`).
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
    """One long-lived ``python -m autograder.batching.warm`` process and its replies, sorted
    by job (several jobs may be in flight)."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path, errors: Path):
        self.errors = errors
        with open(errors, "ab") as err:
            self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        self._lock = threading.Lock()
        self._replies: dict[int, queue.Queue[dict | None]] = {}
        self._ended = False
        self._used = False                                # a job was sent (else close() has nothing to wait for)
        self.grader_pids: dict[int, int] = {}             # job -> its grader's pid, while it runs
        threading.Thread(target=self._read, daemon=True, name="warm-replies").start()

    def _queue(self, job: int) -> queue.Queue[dict | None]:
        with self._lock:
            found = self._replies.get(job)
            if found is None:
                found = self._replies[job] = queue.Queue()
                if self._ended:
                    found.put(None)
            return found

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
                job = int(message["job"])
            except (ValueError, KeyError, TypeError):
                continue
            self._queue(job).put(message)
        with self._lock:
            self._ended = True
            for waiting in self._replies.values():
                waiting.put(None)

    def alive(self) -> bool:
        return self.proc.poll() is None and not self._ended

    def send(self, request: JSONObject) -> None:
        self._queue(int(request["job"]))
        self._used = True
        try:
            with self._lock:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise WarmGraderGone("its pipe is closed") from None

    def reply(self, job: int, key: str, timeout: float) -> dict | None:
        """The reply carrying ``key`` for ``job``; None on timeout; raises when the process ended."""
        waiting = self._queue(job)
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            try:
                message = waiting.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if message is None:
                waiting.put(None)
                raise WarmGraderGone(f"exit code {self.proc.wait()}")
            if key in message:
                if key == "code":
                    with self._lock:
                        self._replies.pop(job, None)
                return message
            if time.monotonic() > deadline:
                return None

    def signal_grader(self, job: int, sig: int) -> None:
        lifetime.signal_group(self.grader_pids.get(job), sig)

    def kill(self) -> None:
        lifetime.kill_groups(*self.grader_pids.values(), self.proc.pid)
        self.proc.wait()

    def close(self) -> None:
        if not self._used:                                # started early, never given a job: nothing to finish
            self.kill()
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=KILL_GRACE)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class WarmPool:
    """The warm grader every job slot shares; used by :meth:`autograder.batching.runner.Runner.execute`."""

    def __init__(self, runner) -> None:
        self.runner = runner
        self.grader: WarmGrader | None = None
        self.started = 0                                 # warm graders started (a dead one is replaced)
        self.jobs = itertools.count(1)
        self.lock = threading.Lock()
        self.exercises = ",".join(ex.id for ex in runner.exercises)

    def start(self) -> None:
        """Start the warm grader now, so that it loads while the batch sets up and stages the
        first submissions (the first job would start it otherwise)."""
        self._warm()

    def _warm(self) -> WarmGrader:
        """The running warm grader; a dead one is killed (with whatever it still ran) and replaced."""
        with self.lock:
            grader = self.grader
            if grader is not None and grader.alive():
                return grader
            if grader is not None:
                grader.kill()
            runner = self.runner
            self.started += 1
            self.grader = WarmGrader([runner.python, "-m", "autograder.batching.warm", "--exercises", self.exercises],
                                     runner.environment(), runner.stage_root,
                                     runner.stage_root / f"warm-{self.started}.err")
            return self.grader

    def execute(self, key: str, job_file: Path, worker_user: str) -> tuple[int, bytes, bool]:
        """Grade job ``key`` (its opaque job file) with the warm grader, as the slot of
        ``worker_user``, in a memory group of its own: ``(code, output, timed out)``."""
        runner = self.runner
        job = next(self.jobs)
        log = runner.stage_root / f"job-{job}.log"
        argv = runner.command(job_file, worker_user)[3:]    # after `python -m autograder`
        folder = runner.stage_root / key
        timed_out, code, note = False, -1, ""
        group = runner.memory.create(key)
        grader = self._warm()
        try:
            grader.send({"job": job, "argv": argv, "cwd": str(folder), "log": str(log),
                         "group": str(group) if group else None})
            begun = grader.reply(job, "pid", START_TIMEOUT)
            if begun is None:
                raise WarmGraderGone("it did not start a grader")
            grader.grader_pids[job] = int(begun["pid"])
            started = time.monotonic()
            done = grader.reply(job, "code", runner.student_timeout - (time.monotonic() - started))
            if done is None:
                timed_out = True
                for sig in (signal.SIGINT, signal.SIGKILL):
                    grader.signal_grader(job, sig)
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
            grader.grader_pids.pop(job, None)
            runner.memory.remove(group)
        try:
            output = log.read_bytes()
            log.unlink()
        except OSError:
            output = b""
        return code, output + note.encode(), timed_out

    def stop_all(self) -> None:
        grader = self.grader
        if grader is not None:
            for job in list(grader.grader_pids):
                grader.signal_grader(job, signal.SIGINT)

    def close(self) -> None:
        if self.grader is not None:
            self.grader.close()
