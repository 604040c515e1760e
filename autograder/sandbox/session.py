"""Grader side of the sandbox: one worker at a time, restarted after a crash or a hang.

``Sandbox`` owns the student's modules (as source text), a worker backend (chosen once when
it opens: :mod:`backends`) and the rules: every request has a deadline; a worker that dies
or overruns is killed (with everything it started) and the next request gets a fresh one
with the modules that loaded cleanly.

One worker per exercise where the backend forks workers (every isolation level on Linux):
:meth:`Sandbox.enter` gives each exercise a fresh worker that imports that exercise's
student file and no other, so no student file can reach the probes, the support snapshot or
the objects of another exercise, and a restart re-imports only the file whose code caused it.
Spawned workers (no ``fork``: Windows, macOS, notebooks; students' own ``check``) and the
in-process backend keep one worker for every module: a fresh interpreter per exercise would
cost a student a torch import each, and there is no grade to protect there.

A :class:`Channel` is what the tests' proxies talk to: the sandbox itself, or a middleware
in front of it (:class:`autograder.budget.Budgeted`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from autograder.sandbox import backends, isolation, levels, limits, protocol, startup
from autograder.sandbox.errors import ExerciseUnavailable, SandboxStartError, SandboxUnavailable, WorkerCrashed


@dataclass(frozen=True)
class ModuleSource:
    name: str          # "attention"
    filename: str      # what tracebacks show, e.g. "attention.py"
    text: str
    cells: tuple[int, ...] = ()   # a notebook: the line each cell starts on (protocol.Load.cells)

    @property
    def notebook(self) -> bool:
        """Handed in as "attention.ipynb": ``text`` is its code cells."""
        return bool(self.cells)


class Channel(Protocol):
    """Requests into student code, as the hidden tests' proxies make them."""

    @property
    def generation(self) -> int:
        """Bumped whenever the worker is replaced: handles into the old one are stale."""

    def request(self, request: protocol.Request, module: str | None = None) -> protocol.Reply:
        """One request to the worker holding ``module`` (``ExerciseUnavailable`` when that
        module is missing or failed to load)."""

    def load_error(self, module: str) -> protocol.WorkerError | None:
        """Why ``module`` cannot be used (missing, syntax error, import error), or None."""

    def unavailable(self, module: str) -> ExerciseUnavailable | None:
        """What a test that calls ``module`` fails with when it cannot be used, or None."""

    def discard_worker(self) -> None:
        """The worker broke the protocol: kill it, never trust it again."""


class Sandbox:
    """The student's modules in a restartable worker; all requests go through here."""

    def __init__(self, modules: list[ModuleSource], config: limits.SandboxConfig | None = None,
                 backend: backends.WorkerBackend | None = None):
        self.config = config or limits.SandboxConfig()
        self.modules = {m.name: m for m in modules}
        self.load_errors: dict[str, protocol.WorkerError] = {}
        self.load_notes: dict[str, protocol.WorkerError] = {}   # a notebook cell raised; the rest ran
        self._loaded: list[str] = []        # modules reloaded into every fresh worker
        self.active: str | None = None      # one worker per exercise: the module it holds
        self._seed: int | None = None       # the last reseed(), for a worker entered after it
        self._unsent_seed: int | None = None    # ... not yet carried by a request (reseed())
        self.reach_ins: dict[str, list[protocol.ReachIn]] = {}   # module -> reach-ins (reachin.py)
        self._generation = 0
        self.backend = backend or startup.choose(self.config)
        self._worker: backends.Worker | None = None
        self._said: set[str] = set()        # level notes already printed
        # why no worker could be started for a module (its exercise's; None: the shared worker),
        # SandboxStartError's message: that exercise's later requests fail at once instead of
        # probing the machine again; the next exercise tries afresh
        self.start_errors: dict[str | None, str] = {}
        levels.announce(self.level, self.backend.why)

    @property
    def level(self) -> str:
        """The isolation level student code runs at."""
        return self.backend.level.name

    @property
    def generation(self) -> int:
        return self._generation

    # -- lifecycle
    def start(self) -> None:
        """Shared worker: start it and load every module, each with its own time limit.
        One worker per exercise: nothing yet (each module loads when :meth:`enter` is called)."""
        if self.backend.per_exercise:
            return
        for name in list(self.modules):
            self._load(name)

    def enter(self, module: str) -> None:
        """From now on requests go to a worker holding ``module`` (an exercise's student file).

        With one worker per exercise, the previous exercise's worker is killed and a fresh one
        imports ``module`` alone (within ``load_timeout``; a failure is recorded in
        ``load_errors``). Handles into the previous worker become stale. A no-op for the
        shared worker, or when ``module`` already holds the worker.
        """
        if not self.backend.per_exercise or module == self.active:
            return
        self.discard_worker()
        self.active = module
        if module in self.modules:
            self._load(module)
        if self._seed is not None:          # the new worker starts from the last seed asked for
            self._unsent_seed = self._seed

    def _load(self, name: str) -> None:
        if name in self.load_errors:
            return
        try:
            reply = self._send(self._load_request(name), self.config.load_timeout)
        except WorkerCrashed as crash:
            self.load_errors[name] = crash.error
            return
        except SandboxUnavailable:          # not the module's fault: start_error() says why
            return
        if reply.error is not None:
            self.load_errors[name] = reply.error
            return
        if reply.note is not None and self.modules[name].notebook:
            self.load_notes[name] = reply.note
        if name not in self._loaded:
            self._loaded.append(name)

    def _load_request(self, name: str) -> protocol.Load:
        source = self.modules[name]
        return protocol.Load(name, source.filename, source.text, cells=source.cells)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def discard_worker(self) -> None:
        """Kill the worker (if any); the next request gets a fresh one, and handles into the
        old one become stale (as after a crash). For a worker that broke the protocol, or an
        exercise that is over."""
        if self._worker is not None and self.backend.restartable:
            self.close()
            self._generation += 1

    def mark_missing(self, module: str, message: str) -> None:
        """``module`` has no usable file (intake says why): its tests fail with that message."""
        self.load_errors[module] = protocol.WorkerError(protocol.ErrorKind.MISSING, message=message)

    def load_error(self, module: str) -> protocol.WorkerError | None:
        return self.load_errors.get(module)

    def unavailable(self, module: str) -> ExerciseUnavailable | None:
        error = self.load_errors.get(module)
        if error is None:
            return None
        source = self.modules.get(module)
        notebook = source is not None and source.notebook
        in_cell = None
        if notebook and error.is_syntax_error:
            from autograder.intake.notebooks import cell_line        # the grader's side only
            in_cell = cell_line(source.text, source.cells, error.line)
        return ExerciseUnavailable(module, error, notebook=notebook, in_cell=in_cell)

    def start_error(self, module: str) -> str | None:
        """Why no worker could be started for ``module``'s tests (the machine's problem), or None."""
        return self.start_errors.get(module if self.backend.per_exercise else None)

    @property
    def worker_ready(self) -> protocol.Ready | None:
        """What the running worker's start-up achieved (None when no worker runs)."""
        return self._worker.ready if self._worker is not None else None

    @property
    def worker_root(self) -> str:
        """How the running worker's root was made ("pivot_root", "chroot", "hidden", "shared"),
        or "" when no worker runs."""
        return self._worker.ready.root if self._worker is not None else ""

    def output(self) -> str:
        return self._worker.output() if self._worker else ""

    def reseed(self, seed: int) -> None:
        """Reset the worker's global state (random generators, …), so that what a test sees
        does not depend on the tests before it or on a worker restart.

        The seed rides on the next call or attribute read (a test's first request, which
        restarts a crashed worker first): the worker resets its state before anything else,
        and a test costs no round trip of its own. Nothing runs in the worker between two
        requests, so the student's code sees the same state as after a request of its own."""
        self._seed = self._unsent_seed = int(seed)

    # -- requests
    def request(self, request: protocol.Request, module: str | None = None,
                timeout: float | None = None) -> protocol.Reply:
        """One request to the worker, within ``timeout`` seconds (default: the call timeout).
        ``module``: the student module the request needs (its worker is entered first; its
        load error, if any, is raised as :class:`ExerciseUnavailable`)."""
        if module is not None and module in self.modules:
            self.enter(module)
        if module is not None and module in self.load_errors:
            raise self.unavailable(module)
        return self._send(request, self.config.call_timeout if timeout is None else timeout)

    def _send(self, request: protocol.Request, timeout: float) -> protocol.Reply:
        if self.active in self.start_errors:
            raise SandboxUnavailable(self.start_errors[self.active])
        try:
            if self._worker is None:
                try:
                    self._start_worker()    # a fresh worker re-imports the modules (may crash too)
                except SandboxStartError as exc:
                    self.start_errors[self.active] = str(exc)
                    raise SandboxUnavailable(str(exc)) from None
            return self._note_reach_ins(self._worker.request(self._with_seed(request), timeout))
        except WorkerCrashed:
            self._worker = None
            self._generation += 1
            raise

    def _with_seed(self, request: protocol.Request) -> protocol.Request:
        """``request`` carrying the seed :meth:`reseed` asked for, if it is the first to go
        since (loads never carry it: a module imports as it did before)."""
        if self._unsent_seed is None or isinstance(request, protocol.Load):
            return request
        request, self._unsent_seed = replace(request, seed=self._unsent_seed), None
        return request

    def _start_worker(self) -> None:
        locked = self.backend.check_files()
        if locked:
            isolation.announce_once(f"isolation: {self.level} — made unreadable to {self.config.user!r}: "
                                    f"{', '.join(locked)}", self._said)
        self._worker = worker = self.backend.start(self.active if self.backend.per_exercise else None)
        isolation.announce_once(self.backend.level.network_note(worker.ready), self._said)
        isolation.announce_once(self.backend.level.root_note(worker.ready), self._said)
        reload = [self.active] if self.backend.per_exercise else self._loaded
        for name in (n for n in reload if n in self._loaded):   # loads the same way again
            self._note_reach_ins(worker.request(self._load_request(name), self.config.load_timeout))

    def _note_reach_ins(self, reply: protocol.Reply) -> protocol.Reply:
        """Keep the reach-ins a reply reports, by the student module whose file made them."""
        by_file = {m.filename: m.name for m in self.modules.values()}
        for record in reply.reach:
            found = self.reach_ins.setdefault(by_file.get(record.filename, self.active or "?"), [])
            if record not in found and len(found) < 20:
                found.append(record)
        return reply
