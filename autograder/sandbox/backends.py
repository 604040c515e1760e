"""How workers are started: one :class:`WorkerBackend`, chosen once when a sandbox opens.

    forked      (forkserver.py) forked from the zygote, one fresh worker per exercise, locked
                down by the isolation level (namespaces, user, landlock, process): every grade
                on Linux and macOS-less POSIX;
    spawned     (spawn.py) a fresh interpreter over pipes, one worker for every module: where
                fork is missing or unsafe (Windows, macOS, a notebook's kernel), for ``check``;
    in-process  (here) student code in this very process: benchmarks and the interop adapter.

A backend starts :class:`Worker` objects; a worker answers typed requests
(:mod:`protocol`) within a deadline and can be killed. The :class:`~autograder.sandbox.session.Sandbox`
holds one backend (chosen by :func:`autograder.sandbox.startup.choose`) and knows nothing of
how its workers came to be.
"""
from __future__ import annotations

import abc
from collections.abc import Collection, Mapping

from autograder.sandbox import isolation, protocol


class Worker(abc.ABC):
    """One running worker."""
    ready: protocol.Ready = protocol.Ready()

    @abc.abstractmethod
    def request(self, request: protocol.Request, timeout: float) -> protocol.Reply:
        """Send ``request`` and wait at most ``timeout`` seconds for the reply. A worker that
        overruns or dies is killed and :class:`~autograder.sandbox.errors.WorkerCrashed` raised."""

    @abc.abstractmethod
    def kill(self, grace: float = 0.0) -> int | None:
        """Kill it and everything it started; its exit status if known (``grace``: wait that
        long for a worker that may be ending on its own)."""

    def output(self) -> str:
        """What the student's code printed (the first bytes)."""
        return ""


# A student file that imports one of these draws, or may (a notebook's plots in ex4): its
# worker gets the drawing part too, loaded by the zygote rather than on its import's clock.
PLOTTING_LIBRARIES = frozenset({"matplotlib", "pylab", "seaborn"})
DRAWING_PART = "figures"                # worker.WARM_UPS: matplotlib's figure and axes, a first drawing


def parts_for(declared: tuple[str, ...], imports: Collection[str]) -> tuple[str, ...]:
    """What one student module's worker loads before it is forked: its exercise's declared
    warm-ups (``Exercise.warm_up``), plus the drawing part when its file's import statements
    name a plotting library (``imports``: intake's ``Found.imports``, from the parse it makes
    anyway). Only a matter of time: a file that draws without such a statement loads
    matplotlib's figure itself, within its import's limit, like any other library."""
    if DRAWING_PART in declared or not PLOTTING_LIBRARIES.intersection(imports):
        return declared
    return (*declared, DRAWING_PART)


def every_part(warm_up: tuple[str, ...], needs: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """``warm_up`` and every module's ``needs`` (``worker.WARM_UPS`` names), each once, in order."""
    return tuple(dict.fromkeys((*warm_up, *(part for parts in needs.values() for part in parts))))


class WorkerBackend(abc.ABC):
    """Starts workers at one isolation level (``level``, chosen for ``why``)."""
    per_exercise: bool = False      # a fresh worker for each exercise, holding only its file
    restartable: bool = True        # a worker can be killed and replaced (not one in this process)

    def __init__(self, level: isolation.Level, why: str):
        self.level, self.why = level, why

    def check_files(self) -> list[str]:
        """Before any student code: what the level must make unreadable is (paths it locked);
        raises :class:`SandboxStartError` when it cannot be made so."""
        return []

    @abc.abstractmethod
    def start(self, module: str | None = None) -> Worker:
        """A fresh, ready worker (:class:`SandboxStartError` when it cannot start), for the
        student module ``module`` (None: a worker shared by every module, or not known)."""

    def describe(self) -> str:
        """One line for ``check -v`` and logs: how student code runs."""
        return self.level.description


class InProcessWorker(Worker):
    """Student code in this process (no deadline, no kill): benchmarks and interop."""

    def __init__(self) -> None:
        import autograder.support
        from autograder.sandbox.worker import Server
        autograder.support.load_all()        # one worker for every exercise: the drawing helpers too
        self._server = Server()

    def request(self, request: protocol.Request, timeout: float) -> protocol.Reply:
        return self._server.handle(request)

    def kill(self, grace: float = 0.0) -> int | None:
        return None


class InProcessBackend(WorkerBackend):
    restartable = False

    def __init__(self) -> None:
        super().__init__(isolation.get(isolation.IN_PROCESS),
                         "benchmark: student code runs in the grader's own process")
        self._worker: InProcessWorker | None = None

    def start(self, module: str | None = None) -> Worker:
        if self._worker is None:          # one interpreter: the same worker for ever
            self._worker = InProcessWorker()
        return self._worker
