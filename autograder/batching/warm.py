"""A warm grader: one long-lived process that grades many submissions in a row.

    python -m autograder.batching.warm [--exercises ex1,ex3]      (started by the batch)

What it keeps is what ``grade`` has loaded before it starts its zygote, and nothing else:
Python, torch, numpy, pytest, the kit's engine (:mod:`autograder.grading`,
:mod:`autograder.cli`) and what the exercises' student calls load on first use (:func:`preload`). It
never imports a hidden suite, the reference or a submission, never starts a zygote, never runs
student code. For each submission it forks a **fresh grader process** that runs exactly
``python -m autograder grade``'s code (:func:`autograder.cli.main` with the same arguments),
which starts its own zygote and workers as ``grade`` does, writes that student's
``results.json``, and exits. Everything of one student (modules, memory, temp folders, the
zygote, workers, environment, working folder) lives and dies in that forked grader.

Protocol, one JSON object per line: the batch writes ``{"job": <opaque id>, "argv": [...],
"cwd": <folder>, "log": <file>}`` on stdin; the warm grader answers
``{"job": id, "pid": <grader pid>}`` when the grader started (the batch may signal its process
group on a timeout) and ``{"job": id, "code": <exit code>}`` when it ended (negative: killed by
that signal). End of stdin ends the warm grader.
"""
from __future__ import annotations

import autograder.__main__  # noqa: F401,I001 - first: drops the working folder from sys.path

import argparse
import atexit
import gc
import json
import os
import signal
import sys
import traceback

from autograder.jsontypes import JSONObject


def preload(exercises: str | None) -> None:
    """What every grader loads before its zygote starts (:mod:`autograder.grading`), and what
    its zygote would load for the exercises' student calls (:func:`autograder.sandbox.worker.warm_up`):
    loaded once here, shared by every grader this process forks and by their zygotes."""
    from autograder import cli, contract, grading  # noqa: F401
    from autograder.sandbox import worker

    worker.warm_up(tuple(dict.fromkeys(p for ex in contract.select(exercises) for p in ex.warm_up)))


def freeze() -> None:
    """Make what :func:`preload` loaded permanent before the first fork, as a grader does
    before it forks its zygote (:class:`autograder.sandbox.forkserver.ForkServer`): otherwise
    each forked grader's first full garbage collection walks every inherited object and so
    copies every page holding one (measured after ``preload()``: 18,000 pages, ~70 MB and
    0.19 s of CPU per grader; 17 pages and no time once frozen). ``preload`` has installed
    the lazy ``torch._dynamo`` of optimizer steps already (``worker.warm_up``), as it must be
    before a freeze (:mod:`autograder.sandbox.lazy_dynamo`)."""
    gc.collect()
    gc.freeze()


def _grader(argv: list[str], cwd: str, log: str, reply_fd: int) -> None:
    """In the forked grader: become ``grade`` and exit (never returns)."""
    code = 70
    try:
        os.close(reply_fd)
        os.setsid()                                           # its own group: the batch may stop it
        from autograder.sandbox import lifetime
        lifetime.die_with_parent()                           # the warm grader gone: so is this one
        if os.environ.get(lifetime.BATCH_ENV):               # the grader's "batch" is now this warm
            os.environ[lifetime.BATCH_ENV] = str(os.getppid())   # grader, which dies with the batch
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.close(null)
        os.chdir(cwd)
        from autograder.cli import main
        try:
            code = int(main(argv) or 0)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # noqa: BLE001 - reported in the log, as `grade` would
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()                                # the zygote's clean-up, as at exit
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(requests, reply_fd: int) -> int:
    """Grade each request in a freshly forked grader; answer on ``reply_fd``."""
    def answer(message: JSONObject) -> None:
        os.write(reply_fd, (json.dumps(message) + "\n").encode())

    for line in requests:
        try:
            request = json.loads(line)
            job, argv, cwd, log = request["job"], list(request["argv"]), request["cwd"], request["log"]
        except (ValueError, KeyError, TypeError):
            continue
        pid = os.fork()
        if pid == 0:
            _grader(argv, cwd, log, reply_fd)
        answer({"job": job, "pid": pid})
        _, status = os.waitpid(pid, 0)
        answer({"job": job, "code": os.waitstatus_to_exitcode(status)})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.batching.warm")
    parser.add_argument("--exercises", default=None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)               # the batch stops it by closing stdin
    from autograder.sandbox import lifetime
    lifetime.die_with_batch()
    reply_fd = os.dup(1)
    os.dup2(2, 1)                                              # stray prints never reach the protocol
    preload(args.exercises)
    freeze()
    return serve(sys.stdin, reply_fd)


if __name__ == "__main__":
    from autograder.process_exit import exit_process
    exit_process(main())
