"""A warm grader: one long-lived process that grades many submissions, several at a time.

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

One warm grader serves every job slot of a batch (:mod:`autograder.batching.pool`): what it
loaded is loaded once and its pages are shared by every grader it forks, however many run at
once (one warm grader per slot loaded it once per slot: 2.3 s of CPU and some 250 MB each).
The slot's own limits go with each job: its worker user in ``grade``'s arguments, and its
memory group, which the forked grader joins before it does anything else.

Protocol, one JSON object per line: the batch writes ``{"job": <opaque id>, "argv": [...],
"cwd": <folder>, "log": <file>, "group": <memory group folder or null>}`` on stdin, for a new
job whenever it likes; the warm grader answers ``{"job": id, "pid": <grader pid>}`` when the
grader started (the batch may signal its process group on a timeout) and
``{"job": id, "code": <exit code>}`` when it ended (negative: killed by that signal). End of
stdin ends the warm grader once its running graders have ended.
"""
from __future__ import annotations

import autograder.__main__  # noqa: F401,I001 - first: drops the working folder from sys.path

import argparse
import atexit
import gc
import json
import os
import select
import signal
import sys
import traceback
from pathlib import Path

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


JOIN_FAILED = 71            # the grader could not join its memory group: nothing was graded


def _join(group: str | None) -> None:
    """Move this process into the memory group ``group`` (cgroup v1 or v2), as the cold path's
    shell does before it execs ``grade`` (:meth:`autograder.jobs.MemoryGroups.wrap`)."""
    if group:
        (Path(group) / "cgroup.procs").write_text(str(os.getpid()))


def _grader(argv: list[str], cwd: str, log: str, group: str | None, reply_fd: int) -> None:
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
        try:
            _join(group)
        except OSError as exc:
            print(f"the grader could not join its memory group {group}: {exc}", file=sys.stderr)
            code = JOIN_FAILED
            return
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


POLL_S = 0.02                    # how often ended graders are looked for while some run


def serve(requests_fd: int, reply_fd: int) -> int:
    """Grade each request read from ``requests_fd`` in a freshly forked grader, as soon as it
    comes (graders of several jobs run at once); answer on ``reply_fd``. Ends when the requests
    end and every grader has ended."""
    running: dict[int, object] = {}                   # grader pid -> job
    pending = b""
    more = True

    def answer(message: JSONObject) -> None:
        os.write(reply_fd, (json.dumps(message) + "\n").encode())

    def start(line: bytes) -> None:
        try:
            request = json.loads(line)
            job, argv, cwd, log = request["job"], list(request["argv"]), request["cwd"], request["log"]
            group = request.get("group")
        except (ValueError, KeyError, TypeError):
            return
        pid = os.fork()
        if pid == 0:
            _grader(argv, cwd, log, group, reply_fd)
        running[pid] = job
        answer({"job": job, "pid": pid})

    def reap(block: bool) -> None:
        while running:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                running.clear()
                return
            if pid == 0:
                return
            if pid in running:
                answer({"job": running.pop(pid), "code": os.waitstatus_to_exitcode(status)})

    while more:
        ready, _, _ = select.select([requests_fd], [], [], POLL_S if running else None)
        if ready:
            chunk = os.read(requests_fd, 1 << 16)
            more = bool(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                start(line)
        reap(block=False)
    reap(block=True)
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
    return serve(sys.stdin.fileno(), reply_fd)


if __name__ == "__main__":
    from autograder.process_exit import exit_process
    exit_process(main())
