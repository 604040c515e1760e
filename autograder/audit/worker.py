"""An audit's grading process: many cases graded one after the other with the engine.

    python -m autograder.audit.worker          (started by ``python -m autograder audit``)

It loads Python, torch, pytest and the engine once, starts this process's zygote once
(:func:`autograder.sandbox.forkserver.shared`, as the kit's own test processes do), then
grades each :class:`~autograder.audit.model.Task` it reads on stdin (one JSON line each) with
:func:`autograder.grading.grade`, exactly ``grade``'s engine and sandbox, under the task's
secret, and answers one :class:`~autograder.audit.model.Grading` per line. End of stdin ends
it. Its worker user is claimed for it alone (``sandbox/users.py``), so several of them (``audit
--jobs``) never sweep each other's workers.
"""
from __future__ import annotations

import autograder.__main__  # noqa: F401,I001 - first: drops the working folder from sys.path

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Iterable

from autograder.audit.model import MESSAGE_LIMIT, Grading, Task, TestVerdict


def grade_task(task: Task, case: str = "", secret_label: str = "") -> Grading:
    """Grade one task in this process; a failure of the engine itself becomes ``error``."""
    from autograder import contract, seeds
    from autograder.grading import GradeRequest, grade
    from autograder.sandbox import SandboxConfig
    from autograder.sandbox.limits import default_worker_user

    request = GradeRequest(submission=Path(task.folder), exercises=contract.select(list(task.exercises)),
                           config=SandboxConfig(user=default_worker_user()))
    try:
        with seeds.secret_override(task.secret):
            outcome = grade(request)
    except Exception as exc:  # noqa: BLE001 - the audit reports it, and goes on
        return Grading(case, secret_label, error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}")
    return Grading(case, secret_label, score=outcome.score, max_score=outcome.max_score,
                   seconds=outcome.execution_time,
                   tests=[TestVerdict(t.exercise, t.number, t.name, t.passed, t.max_score, t.seconds,
                                      "" if t.passed else t.output[:MESSAGE_LIMIT]) for t in outcome.tests],
                   statuses={o.exercise: o.status.value for o in outcome.exercises})


def serve(lines: Iterable[str], reply_fd: int) -> int:
    """Grade each task line; answer ``{"key": …, "grading": …}`` on ``reply_fd``."""
    from autograder.sandbox import forkserver, levels
    levels.detect()
    forkserver.shared()
    for line in lines:
        if not line.strip():
            continue
        task = Task.from_line(line)
        grading = grade_task(task)
        os.write(reply_fd, (json.dumps({"key": task.key, "grading": grading.to_json()}) + "\n").encode())
    return 0


def main() -> int:
    reply_fd = os.dup(1)
    os.dup2(2, 1)                      # stray prints never reach the replies
    return serve(sys.stdin, reply_fd)


if __name__ == "__main__":
    from autograder.process_exit import exit_process
    exit_process(main())
