"""Grader side of the sandbox: one worker at a time, restarted after a crash or a hang.

``Sandbox`` owns the student's modules (as source text), a worker process, and the rules:
every request has a deadline; a worker that dies or overruns is killed (with everything it
started) and the next request gets a fresh one with the modules that loaded cleanly.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass

from autograder.sandbox import forkserver as zygote
from autograder.sandbox import limits, wire
from autograder.sandbox.errors import ExerciseUnavailable, WorkerCrashed
from autograder.sandbox.worker import Server


@dataclass(frozen=True)
class ModuleSource:
    name: str          # "attention"
    filename: str      # what tracebacks show, e.g. "attention.py"
    text: str


class SandboxStartError(RuntimeError):
    """The worker could not be set up: a problem of the grading machine, not the student."""


class OutputCollector(threading.Thread):
    """Drains the worker's stdout/stderr pipe, keeping the first ``limit`` bytes."""

    def __init__(self, fd: int, limit: int):
        super().__init__(daemon=True)
        self.fd, self.limit = fd, limit
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        out = self.kept.decode("utf-8", "replace")
        if self.total > self.limit:
            out += f"\n… ({self.total - self.limit} more bytes of output not shown)"
        return out


class _DeadlineSocket:
    """Socket reads that respect one overall deadline (a slow drip cannot stretch a call)."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def recv(self, size: int) -> bytes:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv(size)
        except socket.timeout:
            raise TimeoutError from None


class WorkerProcess:
    """One sandboxed worker, started by the fork server."""

    def __init__(self, forkserver: zygote.ForkServer, config: limits.SandboxConfig, ids: dict):
        self.config = config
        self.home = tempfile.mkdtemp(prefix="ag-worker-")
        if config.privileged:
            os.chown(self.home, ids["uid"], ids["gid"])
        os.chmod(self.home, 0o700)
        self._sock, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        self._forkserver = forkserver
        self.leader = forkserver.spawn([theirs.fileno(), out_w], {
            "limits": dataclasses.asdict(config), "home": self.home, **ids})
        theirs.close()
        os.close(out_w)
        self.output = OutputCollector(out_r, config.output_limit)
        self.output.start()
        self.uid = ids.get("uid")
        self.pid = self.leader
        self.namespace: str | None = None   # the worker's own pid namespace (root only)
        try:
            hello, _ = self.request({}, [], timeout=30.0, expect_hello=True)
            self.pid = hello["pid"]
            if config.privileged:
                self.namespace = limits.pid_namespace(self.pid)
            self.request({}, [], timeout=30.0, expect_hello=True)      # {"ready": true}
        except WorkerCrashed:
            time.sleep(0.1)
            raise SandboxStartError("the sandbox worker failed to start:\n" + self.output.text()) from None

    def request(self, header: dict, buffers: list[bytes], timeout: float,
                expect_hello: bool = False) -> tuple[dict, list[bytes]]:
        deadline = time.monotonic() + timeout
        try:
            if not expect_hello:
                self._sock.settimeout(timeout)
                wire.send(self._sock, header, buffers)
            return wire.recv(_DeadlineSocket(self._sock, deadline),   # type: ignore[arg-type]
                             limit=wire.MAX_REPLY_BYTES, header_limit=wire.MAX_REPLY_HEADER_BYTES)
        except TimeoutError:
            self.kill()
            raise WorkerCrashed("timeout", f"did not finish within {timeout:g} s "
                                "(an infinite loop, or far too slow?)") from None
        except (EOFError, OSError, wire.WireError) as exc:
            status = self.kill(grace=0.5 if isinstance(exc, EOFError) else 0.0)
            raise WorkerCrashed("died", describe_exit(status, self.config, exc)) from None

    def kill(self, grace: float = 0.0) -> int | None:
        """Kill the worker and everything it started; its wait status if known.

        ``grace``: a worker that closed its end may be exiting on its own; wait that long
        for its real status before killing it.
        """
        status = self._forkserver.reap(self.leader, timeout=grace) if grace else None
        for target in {self.pid, self.leader}:
            try:
                os.killpg(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.config.privileged and self.uid is not None:
            limits.kill_user_processes(self.uid, self.namespace)
        if status is None:
            status = self._forkserver.reap(self.leader)
        self._sock.close()
        shutil.rmtree(self.home, ignore_errors=True)
        return status


def describe_exit(status: int | None, config: limits.SandboxConfig, exc: Exception) -> str:
    if isinstance(exc, wire.WireError):
        return f"sent a reply the grader could not read ({exc})"
    if status is None:
        return "stopped answering"
    code = os.waitstatus_to_exitcode(status)
    if code in (128 + signal.SIGKILL, -signal.SIGKILL):
        return ("was killed with SIGKILL: the machine ran out of memory (the worker may "
                f"allocate {config.memory_mb} MB), or the code killed its own process")
    if code > 128 or code < 0:
        sig = code - 128 if code > 128 else -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"was killed by signal {name}"
    return f"exited with status {code} (os._exit / a crash in native code?)"


class Sandbox:
    """The student's modules in a restartable worker; all requests go through here."""

    def __init__(self, modules: list[ModuleSource], config: limits.SandboxConfig | None = None,
                 forkserver: zygote.ForkServer | None = None, in_process: bool = False):
        self.config = config or limits.SandboxConfig()
        self.modules = {m.name: m for m in modules}
        self.load_errors: dict[str, dict] = {}
        self._loaded: list[str] = []        # modules reloaded into every fresh worker
        self.generation = 0
        self.in_process = in_process
        self._forkserver = forkserver
        self._worker: WorkerProcess | None = None
        self._local: Server | None = None
        self._ids: dict = {}
        if not in_process and self.config.privileged:
            uid, gid = limits.ensure_user(self.config.user)
            self._ids = {"uid": uid, "gid": gid}

    # -- lifecycle
    def start(self) -> None:
        """Start a worker and load every module, each with its own time limit."""
        for name in list(self.modules):
            if name in self.load_errors:
                continue
            try:
                reply = self._raw({"op": "load", "name": name, "filename": self.modules[name].filename,
                                   "source": self.modules[name].text}, [], self.config.load_timeout)
            except WorkerCrashed as crash:
                self.load_errors[name] = {"kind": crash.kind, "type": "", "message": crash.detail,
                                          "where": []}
                continue
            if "error" in reply[0]:
                self.load_errors[name] = reply[0]["error"]
            else:
                self._loaded.append(name)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def output(self) -> str:
        return self._worker.output.text() if self._worker else ""

    def reseed(self, seed: int) -> None:
        """Reset the worker's global random generators (Python, NumPy, torch), so that what a
        test sees does not depend on the tests before it or on a worker restart."""
        try:
            self._raw({"op": "seed", "seed": int(seed)}, [], self.config.call_timeout)
        except WorkerCrashed:
            pass                        # the test's own first call restarts the worker

    # -- requests
    def request(self, header: dict, buffers: list[bytes], module: str | None = None) -> tuple[dict, list[bytes]]:
        if module is not None and module in self.load_errors:
            raise ExerciseUnavailable(module, self.load_errors[module])
        return self._raw(header, buffers, self.config.call_timeout)

    def _raw(self, header: dict, buffers: list[bytes], timeout: float) -> tuple[dict, list[bytes]]:
        if self.in_process:
            if self._local is None:
                self._local = Server()
            return self._local.handle(header, buffers)
        try:
            if self._worker is None:
                self._spawn()           # a fresh worker re-imports the modules (may crash too)
            return self._worker.request(header, buffers, timeout)
        except WorkerCrashed:
            self._worker = None
            self.generation += 1
            raise

    def _spawn(self) -> None:
        from autograder.sandbox import spawn
        if spawn.chosen(self.config):       # no fork (Windows) or unsafe fork (macOS): a fresh interpreter
            self._worker = spawn.SpawnedWorker(self.config)
        else:
            if self._forkserver is None or not self._forkserver.alive():
                self._forkserver = zygote.shared()
            self._worker = WorkerProcess(self._forkserver, self.config, self._ids)
        for name in self._loaded:           # deterministic code loads the same way again
            source = self.modules[name]
            self._worker.request({"op": "load", "name": name, "filename": source.filename,
                                  "source": source.text}, [], self.config.load_timeout)
