"""Grading the audit's cases: each case once per secret, ``--jobs`` grading processes at once.

Every case is written once as a submission folder in a private working folder; each (case,
secret) becomes a :class:`~autograder.audit.model.Task`, handed to whichever grading process
(:mod:`autograder.audit.worker`) is free, heaviest first (cases graded on several exercises,
then the rest in order). One grading serves every test's row of the report: no test is ever
run on its own.
"""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import autograder
from autograder.audit.cases import Case
from autograder.audit.model import Grading, SecretChoice, Task

WORKER_MODULE = "autograder.audit.worker"


@dataclass(frozen=True)
class Job:
    """A task and what it stands for in the report."""
    task: Task
    case: Case
    secret: SecretChoice


def write_cases(cases: list[Case], folder: Path) -> dict[str, Path]:
    """Each case's files as a submission folder ``folder/<n>/submission``: case label -> folder."""
    out: dict[str, Path] = {}
    for n, case in enumerate(cases):
        submission = folder / str(n) / "submission"
        for name, content in case.files.items():
            target = submission / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        submission.mkdir(parents=True, exist_ok=True)
        out[case.label] = submission
    return out


def plan(cases: list[Case], secrets: list[SecretChoice], folders: dict[str, Path]) -> list[Job]:
    """Every (case, secret) once, heaviest cases first (the most exercises)."""
    ordered = sorted(cases, key=lambda c: -len(c.exercises))
    jobs = []
    for secret in secrets:
        for case in ordered:
            jobs.append(Job(Task(len(jobs), str(folders[case.label]), case.exercises, secret.value), case, secret))
    return sorted(jobs, key=lambda j: -len(j.case.exercises))


def worker_env() -> dict[str, str]:
    """The grading processes' environment: this kit first on the path, a fixed hash seed (as
    ``run_autograder`` and ``batch``), no display."""
    env = dict(os.environ)
    parent = str(autograder.repo_root())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (parent, env.get("PYTHONPATH", "")) if p)
    env.update(PYTHONHASHSEED="0", MPLBACKEND="Agg")
    env.pop("PYTEST_ADDOPTS", None)
    return env


class GradingProcess:
    """One ``python -m autograder.audit.worker``: send a task, read its grading."""

    def __init__(self, cwd: Path, log: Path):
        self.log = log
        with open(log, "ab") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", WORKER_MODULE], cwd=cwd, env=worker_env(),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         text=True, start_new_session=True)

    def grade(self, job: Job) -> Grading:
        """The grading of ``job`` (an error grading when the process died meanwhile)."""
        import json
        try:
            self.proc.stdin.write(job.task.to_line())
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            return Grading(job.case.label, job.secret.label,
                           error=f"the grading process ended (exit code {self.proc.poll()}); see {self.log}")
        grading = Grading.from_json(json.loads(line)["grading"])
        grading.case, grading.secret = job.case.label, job.secret.label
        return grading

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


Progress = Callable[[int, int, Grading], None]


def grade_all(jobs: list[Job], processes: int, workdir: Path, logs: Path,
              progress: Progress | None = None) -> list[Grading]:
    """Every job graded by ``processes`` grading processes (working in ``workdir``, their
    stderr in ``logs/grading-<n>.log``); gradings in the jobs' order."""
    logs.mkdir(parents=True, exist_ok=True)
    for old in logs.glob("grading-*.log"):          # an earlier audit's
        old.unlink()
    todo: queue.Queue[Job] = queue.Queue()
    for job in jobs:
        todo.put(job)
    done: dict[int, Grading] = {}
    lock = threading.Lock()

    def slot(index: int) -> None:
        process = GradingProcess(workdir, logs / f"grading-{index}.log")
        try:
            while True:
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    return
                if not process.alive():              # died on an earlier case: a fresh one
                    process = GradingProcess(workdir, logs / f"grading-{index}.log")
                grading = process.grade(job)
                with lock:
                    done[job.task.key] = grading
                    if progress:
                        progress(len(done), len(jobs), grading)
        finally:
            process.close()

    threads = [threading.Thread(target=slot, args=(i,), daemon=True, name=f"audit-{i}")
               for i in range(max(1, min(processes, len(jobs))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [done[job.task.key] for job in jobs]


def print_progress(stream=sys.stderr) -> Progress:
    """One line per grading: ``[12/160] ex1/mutant/np_no_scale (checkout): 14.5 / 20, 3.2 s``."""
    started = time.monotonic()

    def show(n: int, total: int, grading: Grading) -> None:
        what = f"ERROR {grading.error.splitlines()[0][:100]}" if grading.error else \
            f"{grading.score:g} / {grading.max_score:g}, {grading.seconds:.1f} s"
        print(f"[{n}/{total} {time.monotonic() - started:.0f} s] {grading.case} ({grading.secret}): {what}",
              file=stream, flush=True)
    return show
