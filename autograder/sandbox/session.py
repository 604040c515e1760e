"""Grader side of the sandbox: one worker at a time, restarted after a crash or a hang.

``Sandbox`` owns the student's modules (as source text), a worker process, and the rules:
every request has a deadline; a worker that dies or overruns is killed (with everything it
started) and the next request gets a fresh one with the modules that loaded cleanly.

One worker per exercise: where workers are forked from the zygote (every isolation level on
Linux), :meth:`Sandbox.enter` gives each exercise a fresh worker that imports that exercise's
student file and no other, so no student file can reach the probes, the support snapshot or
the objects of another exercise, and a restart re-imports only the file whose code caused it.
Spawned workers (no ``fork``: Windows, macOS, notebooks; students' own ``check``) and the
in-process backend keep one worker for every module: a fresh interpreter per exercise would
cost a student a torch import each, and there is no grade to protect there.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass

from autograder.sandbox import forkserver as zygote
from autograder.sandbox import isolation, levels, lifetime, limits, users, wire
from autograder.sandbox.errors import ExerciseUnavailable, SandboxStartError, WorkerCrashed
from autograder.sandbox.output import OutputCollector
from autograder.sandbox.worker import Server


@dataclass(frozen=True)
class ModuleSource:
    name: str          # "attention"
    filename: str      # what tracebacks show, e.g. "attention.py"
    text: str


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

    def __init__(self, forkserver: zygote.ForkServer, config: limits.SandboxConfig, ids: dict,
                 level: isolation.Level):
        self.config = config
        self.level = level                  # what this worker's isolation level does (isolation.py)
        self.ids = ids
        self.home = tempfile.mkdtemp(prefix="ag-worker-")
        level.prepare_home(self.home, ids)
        self._sock, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        self._forkserver = forkserver
        self.leader = forkserver.spawn([theirs.fileno(), out_w], {
            "limits": dataclasses.asdict(config), "home": self.home, "level": level.name, **ids})
        theirs.close()
        os.close(out_w)
        self.output = OutputCollector(out_r, config.output_limit)
        self.output.start()
        self.uid, self.gid = ids.get("uid"), ids.get("gid")
        self.pid = self.leader
        self.namespace: str | None = None   # the worker's own pid namespace (namespaces level)
        self.network_blocked = False
        self.root = ""
        try:
            hello, _ = self.request({}, [], timeout=30.0, expect_hello=True)
            self.pid = hello["pid"]
            if level.network_isolated:       # namespaces: its own pid namespace too
                self.namespace = lifetime.pid_namespace(self.pid)
            ready, _ = self.request({}, [], timeout=30.0, expect_hello=True)   # {"ready": true, ...}
            self.network_blocked = bool(ready.get("network_blocked"))
            self.root = str(ready.get("root", ""))   # namespaces: "pivot_root" | "chroot" | "hidden"
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
            reply, buffers = wire.recv(_DeadlineSocket(self._sock, deadline),   # type: ignore[arg-type]
                                       limit=wire.MAX_REPLY_BYTES,
                                       header_limit=wire.MAX_REPLY_HEADER_BYTES)
            return (reply if expect_hello else wire.check_reply(reply)), buffers
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
        self.level.sweep(self.ids, self.namespace)
        if status is None:
            status = self._forkserver.reap(self.leader)
        self._sock.close()
        users.remove_home(self.home)           # any depth, never raises (filetree.remove)
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
        self.active: str | None = None      # one worker per exercise: the module it holds
        self._seed: int | None = None       # the last reseed(), for a worker entered after it
        self.reach_ins: dict[str, list[list]] = {}   # module -> [event, file, line] (reachin.py)
        self.generation = 0
        self.in_process = in_process
        self._forkserver = forkserver
        self._worker: WorkerProcess | None = None
        self._local: Server | None = None
        self.level, self.level_why = self._pick_level()
        self._isolation = isolation.get(self.level)
        self.network_blocked = self._isolation.network_isolated
        self._checked_files = False
        self._said: set[str] = set()        # level notes already printed
        self._ids = self._isolation.worker_ids(self.config)
        levels.announce(self.level, self.level_why)

    def _pick_level(self) -> tuple[str, str]:
        """The isolation level this sandbox runs at, and why (see levels.py)."""
        if self.in_process:
            return "in-process", "benchmark: student code runs in the grader's own process"
        from autograder.sandbox import spawn
        try:
            if spawn.chosen(self.config):                   # never silently weaker as root
                return levels.spawned_level(self.config.isolation)
            return levels.resolve(self.config.isolation)
        except levels.IsolationUnavailable as exc:
            raise SandboxStartError(str(exc)) from None

    def _check_files(self) -> None:
        """Before any student code: the level's own check of what the worker can read (user
        level: locks what it can, as root; refuses to start when something stays readable)."""
        if self._checked_files:
            return
        locked = self._isolation.check_files(self.config, self._ids)
        if locked:
            print(f"isolation: {self.level} — made unreadable to {self.config.user!r}: {', '.join(locked)}",
                  file=sys.stderr, flush=True)
        self._checked_files = True

    # -- lifecycle
    @property
    def worker_per_exercise(self) -> bool:
        """Whether each exercise gets a worker of its own (forked workers; see the module doc)."""
        from autograder.sandbox import spawn
        return not self.in_process and not spawn.chosen(self.config)

    def start(self) -> None:
        """Shared worker: start it and load every module, each with its own time limit.
        One worker per exercise: nothing yet (each module loads when :meth:`enter` is called)."""
        if self.worker_per_exercise:
            return
        for name in list(self.modules):
            self._load(name)

    def enter(self, module: str) -> None:
        """From now on requests go to a worker holding ``module`` (an exercise's student file).

        With one worker per exercise, the previous exercise's worker is killed and a fresh one,
        forked from the zygote, imports ``module`` alone (within ``load_timeout``; a failure is
        recorded in ``load_errors``). Handles into the previous worker become stale. A no-op
        for the shared worker, or when ``module`` already holds the worker.
        """
        if not self.worker_per_exercise or module == self.active:
            return
        self.discard_worker()
        self.active = module
        if module in self.modules:
            self._load(module)
        if self._seed is not None:          # the new worker starts from the last seed asked for
            self.reseed(self._seed)

    def _load(self, name: str) -> None:
        if name in self.load_errors:
            return
        try:
            reply = self._raw({"op": "load", "name": name, "filename": self.modules[name].filename,
                               "source": self.modules[name].text}, [], self.config.load_timeout)
        except WorkerCrashed as crash:
            self.load_errors[name] = {"kind": crash.kind, "type": "", "message": crash.detail,
                                      "where": []}
            return
        if "error" in reply[0]:
            self.load_errors[name] = reply[0]["error"]
        elif name not in self._loaded:
            self._loaded.append(name)

    def _note_worker(self, worker: WorkerProcess) -> None:
        """What the worker reported of its isolation; the level's notes said once each."""
        self.network_blocked = self._isolation.network_isolated or worker.network_blocked
        isolation.announce_once(self._isolation.network_note(worker.network_blocked), self._said)
        isolation.announce_once(self._isolation.root_note(worker.root), self._said)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def discard_worker(self) -> None:
        """Kill the worker (if any); the next request gets a fresh one, and handles into the
        old one become stale (as after a crash). For a worker that broke the protocol, or an
        exercise that is over."""
        if self.in_process:
            return
        if self._worker is not None:
            self.close()
            self.generation += 1

    @property
    def worker_root(self) -> str:
        """How the running worker's root was made ("pivot_root", "chroot", "hidden", "shared"),
        or "" when no worker runs."""
        return self._worker.root if self._worker is not None and hasattr(self._worker, "root") else ""

    def output(self) -> str:
        return self._worker.output.text() if self._worker else ""

    def reseed(self, seed: int) -> None:
        """Reset the worker's global random generators (Python, NumPy, torch), so that what a
        test sees does not depend on the tests before it or on a worker restart."""
        self._seed = int(seed)
        try:
            self._raw({"op": "seed", "seed": int(seed)}, [], self.config.call_timeout)
        except WorkerCrashed:
            pass                        # the test's own first call restarts the worker

    # -- requests
    def request(self, header: dict, buffers: list[bytes], module: str | None = None,
                timeout: float | None = None) -> tuple[dict, list[bytes]]:
        """One request to the worker, within ``timeout`` seconds (default: the call timeout).
        ``module``: the student module the request needs (its worker is entered first; its
        load error, if any, is raised as :class:`ExerciseUnavailable`)."""
        if module is not None and module in self.modules:
            self.enter(module)
        if module is not None and module in self.load_errors:
            raise ExerciseUnavailable(module, self.load_errors[module])
        return self._raw(header, buffers, self.config.call_timeout if timeout is None else timeout)

    def _raw(self, header: dict, buffers: list[bytes], timeout: float) -> tuple[dict, list[bytes]]:
        if self.in_process:
            if self._local is None:
                self._local = Server()
            return self._note_reach_ins(self._local.handle(header, buffers))
        try:
            if self._worker is None:
                self._spawn()           # a fresh worker re-imports the modules (may crash too)
            return self._note_reach_ins(self._worker.request(header, buffers, timeout))
        except WorkerCrashed:
            self._worker = None
            self.generation += 1
            raise

    def _note_reach_ins(self, reply: tuple[dict, list[bytes]]) -> tuple[dict, list[bytes]]:
        """Keep the reach-ins a reply reports, by the student module whose file made them."""
        header, buffers = reply
        if "reach" in header:
            header = dict(header)
            by_file = {m.filename: m.name for m in self.modules.values()}
            for record in header.pop("reach"):
                found = self.reach_ins.setdefault(by_file.get(record[1], self.active or "?"), [])
                if record not in found and len(found) < 20:
                    found.append(record)
        return header, buffers

    def _spawn(self) -> None:
        from autograder.sandbox import spawn
        if spawn.chosen(self.config):       # no fork (Windows) or unsafe fork (macOS): a fresh interpreter
            self._worker = spawn.SpawnedWorker(self.config)
        else:
            if self._forkserver is None or not self._forkserver.alive():
                self._forkserver = zygote.shared()
            self._check_files()
            self._worker = WorkerProcess(self._forkserver, self.config, self._ids, self._isolation)
            self._note_worker(self._worker)
        reload = [self.active] if self.worker_per_exercise else self._loaded
        for name in (n for n in reload if n in self._loaded):   # loads the same way again
            source = self.modules[name]
            self._note_reach_ins(self._worker.request({"op": "load", "name": name, "filename": source.filename,
                                                       "source": source.text}, [], self.config.load_timeout))
