"""A worker started without ``fork``: a fresh interpreter talking the wire format over pipes.

Where ``os.fork`` is missing (Windows) or unsafe after torch is loaded (macOS), the fork
server cannot run. This module is the portable alternative, used by ``check`` there:

* grader side, :class:`SpawnedWorker`: ``subprocess.Popen([python, -c, BOOT, root])`` with its
  stdin/stdout as the request/reply channel (wire.py frames: JSON + raw buffers, no pickle)
  and its stderr as the captured output of the student's code. Every request has a deadline
  (a reader thread + a queue: pipes cannot be polled with a timeout on Windows); a worker
  that overruns is killed (POSIX: its whole process group; Windows: the process) and the
  :class:`~autograder.sandbox.session.Sandbox` starts a fresh one for the next call.
* worker side, :func:`main` (``python -m autograder.sandbox.spawn``): before any student code
  runs, the channel moves to private duplicates of fds 0 and 1, and fd 1 is pointed at the
  captured output (fd 2), so a student's ``print`` can never corrupt a reply.

Needs nothing POSIX-only (no ``resource``, ``pwd``, ``grp``, ``fcntl``, ``fork``): where
``resource`` exists, memory/file/core limits are applied too (Linux), else only the time limit.
"""
from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.sandbox import backends, isolation, lifetime, limits, protocol, users, wire
from autograder.sandbox.errors import SandboxStartError, WorkerCrashed
from autograder.sandbox.output import OutputCollector

START_TIMEOUT = 120.0        # a first `import torch` on a slow laptop (antivirus on Windows)
KIT_PARENT = str(Path(__file__).resolve().parents[2])   # the folder that holds autograder/
BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from autograder.sandbox.spawn import main; main(*sys.argv[2:4])")


def _has_rlimits() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import resource  # noqa: F401
    except ImportError:
        return False
    return True


def describe() -> str:
    """One line for ``check -v`` and reports: how a spawned worker isolates."""
    extra = ("time and memory limits" if _has_rlimits() else
             "a time limit on every call, no memory limit on this system")
    return (f"your code ran in a separate Python process started without fork ({extra}); "
            "a self-check: no user or namespace isolation")


# --------------------------------------------------------------------------- grader side

class _PipeChannel:
    """The ``recv``/``sendall`` that wire.py expects, over two raw file descriptors."""

    def __init__(self, read_fd: int | None, write_fd: int | None):
        self.read_fd, self.write_fd = read_fd, write_fd

    def recv(self, size: int) -> bytes:
        return os.read(self.read_fd, size)

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view):]


class SpawnedWorker(backends.Worker):
    """One worker interpreter over pipes."""

    def __init__(self, config: limits.SandboxConfig, warm_up: tuple[str, ...] | None = None):
        self.config = config
        self.home = tempfile.mkdtemp(prefix="ag-worker-")
        posix = os.name == "posix"
        python, env = interpreter(worker_env(self.home))
        self._proc = subprocess.Popen(
            [python, "-c", BOOT, KIT_PARENT, json.dumps(dataclasses.asdict(config)), json.dumps(warm_up)],
            cwd=self.home, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
            start_new_session=posix, close_fds=True,
            creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0))
        self.pid = self._proc.pid
        self._send = _PipeChannel(None, self._proc.stdin.fileno())
        self._replies: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read_replies, daemon=True)
        self._reader.start()
        self._output = OutputCollector(os.dup(self._proc.stderr.fileno()), config.output_limit)
        self._proc.stderr.close()
        self._output.start()
        try:
            self.ready = protocol.Ready.from_json(self._next(START_TIMEOUT)[0])
        except (WorkerCrashed, wire.WireError):
            time.sleep(0.1)
            self.kill()
            raise SandboxStartError("the checking worker failed to start:\n" + self._output.text()) from None

    def _read_replies(self) -> None:
        channel = _PipeChannel(self._proc.stdout.fileno(), None)
        while True:
            try:
                frame = wire.recv(channel, limit=wire.MAX_REPLY_BYTES,   # type: ignore[arg-type]
                                  header_limit=wire.MAX_REPLY_HEADER_BYTES)
            except (EOFError, OSError, ValueError, wire.WireError) as exc:
                self._replies.put(exc)
                return
            self._replies.put(frame)

    def _next(self, timeout: float) -> tuple[dict, list[bytes]]:
        """The next frame from the worker, within ``timeout`` seconds."""
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise WorkerCrashed(protocol.ErrorKind.TIMEOUT, f"did not finish within {timeout:g} s "
                                "(an infinite loop, or far too slow?)") from None
        if isinstance(reply, BaseException):
            status = self.kill(grace=0.5 if isinstance(reply, (EOFError, OSError)) else 0.0)
            raise WorkerCrashed(protocol.ErrorKind.DIED, describe_exit(status, self.config, reply)) from None
        return reply

    def request(self, request: protocol.Request, timeout: float) -> protocol.Reply:
        try:
            wire.send(self._send, *request.to_frame())             # type: ignore[arg-type]
        except OSError as exc:                                    # the worker is gone
            status = self.kill(grace=0.5)
            raise WorkerCrashed(protocol.ErrorKind.DIED, describe_exit(status, self.config, exc)) from None
        header, buffers = self._next(timeout)
        try:
            return protocol.Reply.from_frame(header, buffers)
        except wire.WireError as exc:
            status = self.kill()
            raise WorkerCrashed(protocol.ErrorKind.DIED, describe_exit(status, self.config, exc)) from None

    def kill(self, grace: float = 0.0) -> int | None:
        """Kill the worker (on POSIX with everything it started); its exit code if known."""
        code = lifetime.kill_child(self._proc, grace)
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        users.remove_home(self.home)           # any depth, never raises (filetree.remove)
        return code

    def output(self) -> str:
        return self._output.text()


class SpawnedBackend(backends.WorkerBackend):
    """Fresh interpreters (no fork), one worker for every module of the submission: a fresh
    interpreter per exercise would cost a student a torch import each, and there is no grade
    to protect in a student's own ``check``."""

    def __init__(self, config: limits.SandboxConfig, level: isolation.Level, why: str,
                 warm_up: tuple[str, ...] | None = None):
        super().__init__(level, why)
        self.config = config
        self.warm_up = warm_up          # what each worker loads before it says ready (None: all)

    def start(self, module: str | None = None) -> SpawnedWorker:
        return SpawnedWorker(self.config, self.warm_up)

    def describe(self) -> str:
        return describe()


def describe_exit(code: int | None, config: limits.SandboxConfig, exc: BaseException) -> str:
    if isinstance(exc, wire.WireError):
        return f"sent a reply the checker could not read ({exc})"
    if code is None:
        return "stopped answering"
    if code < 0:
        import signal
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        if name == "SIGKILL":
            return ("was killed with SIGKILL: the machine ran out of memory (the worker may "
                    f"allocate {config.memory_mb} MB), or the code killed its own process")
        return f"was killed by signal {name}"
    return f"exited with status {code} (sys.exit / os._exit / a crash in native code?)"


def interpreter(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The interpreter to start, and its environment. On Windows a venv's ``python.exe`` is a
    redirector that starts the real interpreter as a child, which killing the redirector
    would leave running: start the base interpreter and tell it about the venv, as
    ``multiprocessing`` does (bpo-35797)."""
    base = getattr(sys, "_base_executable", sys.executable)
    if os.name == "nt" and base and os.path.normcase(base) != os.path.normcase(sys.executable):
        return base, {**env, "__PYVENV_LAUNCHER__": sys.executable}
    return sys.executable, env


def worker_env(home: str) -> dict[str, str]:
    """The student's environment, plus headless matplotlib and single-threaded maths."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update({"MPLBACKEND": "Agg", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONIOENCODING": "utf-8", "TMPDIR": home, "TEMP": home, "TMP": home})
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = "1"
    return env


# --------------------------------------------------------------------------- worker side

def _binary(fd: int) -> None:
    if os.name == "nt":                                  # no newline translation on the channel
        import msvcrt
        msvcrt.setmode(fd, os.O_BINARY)


def _take_channel() -> _PipeChannel:
    """Move the channel off fds 0/1 and point fd 1 at the captured output (fd 2)."""
    channel = _PipeChannel(os.dup(0), os.dup(1))
    for fd in (channel.read_fd, channel.write_fd, 2):
        _binary(fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, encoding="utf-8", errors="replace",
                                       closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, encoding="utf-8", errors="replace",
                                       closefd=False)
    return channel


def _apply_limits(config: limits.SandboxConfig) -> None:
    """Memory/file/core limits where the platform has them (Linux); nothing elsewhere."""
    if not _has_rlimits():
        return
    try:
        limits.apply_rlimits(config)
    except (OSError, ValueError, ImportError, AttributeError):
        pass


def _watch_parent() -> None:
    """Exit when the checking process is gone, even while student code hangs (a closed pipe
    is only noticed between calls). POSIX: the parent pid changes; Windows: wait on the
    parent's process handle (no job object: out of scope)."""
    parent = os.getppid()

    def watch_posix() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    def watch_windows() -> None:
        import ctypes
        kernel32 = ctypes.windll.kernel32                       # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x00100000, False, parent)   # SYNCHRONIZE
        if handle:
            kernel32.WaitForSingleObject(handle, 0xFFFFFFFF)       # INFINITE
            os._exit(1)

    target = watch_posix if os.name == "posix" else watch_windows
    threading.Thread(target=target, daemon=True).start()


def main(config_json: str = "{}", warm_up_json: str = "null") -> None:
    """Worker entry point: take the channel, load the libraries, say ready, serve.

    ``config_json``: the grader's :class:`~autograder.sandbox.limits.SandboxConfig` as JSON;
    ``warm_up_json``: the parts of :func:`worker.warm_up` the exercises' calls need, as a JSON
    list (``null``: every part)."""
    channel = _take_channel()
    _watch_parent()
    import torch
    torch.set_num_threads(1)
    from autograder.sandbox import worker
    parts = json.loads(warm_up_json)
    worker.warm_up(tuple(worker.WARM_UPS if parts is None else parts))   # before ready: never on a call's clock
    _apply_limits(limits.SandboxConfig(**json.loads(config_json)))
    wire.send(channel, protocol.Ready().to_json())       # type: ignore[arg-type]
    worker.serve(channel)


if __name__ == "__main__":
    main(*sys.argv[1:2])
