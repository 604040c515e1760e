"""Which backend starts a sandbox's workers (:mod:`backends`): chosen once, when it opens.

In-process when asked (benchmarks, interop); spawned where ``fork`` is missing or unsafe
(Windows, macOS) or forced (``AUTOGRADER_WORKER_START=spawn``); else forked from the zygote at
the strongest isolation level the platform allows (:mod:`levels`).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from autograder.sandbox import backends, isolation, levels, limits
from autograder.sandbox.errors import SandboxStartError

SPAWN_ENV = "AUTOGRADER_WORKER_START"   # "fork" | "spawn": overrides the automatic choice


def fork_unavailable() -> bool:
    """Whether this platform cannot (Windows) or should not (macOS) fork a worker."""
    return not hasattr(os, "fork") or sys.platform in ("win32", "darwin")


def spawns(config: limits.SandboxConfig) -> bool:
    """Whether ``config``'s workers are spawned (True) or forked from the zygote (False)."""
    if not hasattr(os, "fork"):
        return True
    forced = levels.requested(config.isolation)
    if forced != "auto" and isolation.get(forced).worker_user:
        return False            # a spawned worker is isolated by process only: never a downgrade
    start = os.environ.get(SPAWN_ENV) or config.worker_start or "auto"
    if start in ("spawn", "fork"):
        return start == "spawn"
    return fork_unavailable()


def describe_start(config: limits.SandboxConfig) -> str:
    """One line for ``check -v``: how workers for ``config`` would start (nothing is started)."""
    if spawns(config):
        from autograder.sandbox import spawn
        return spawn.describe()
    return ("your code ran in a separate worker process forked from this one (time and memory "
            "limits); a self-check: no user or namespace isolation")


def start_zygote_early(config: limits.SandboxConfig, in_process: bool = False,
                       warm_up: tuple[str, ...] = ()) -> None:
    """Fork this process's zygote now (:func:`forkserver.shared`) and ask it for ``warm_up``
    (the first exercise's parts), when ``config``'s workers will be forked from it.

    ``grade`` calls this once torch is its only large import: the zygote then loads what
    workers need (:mod:`~autograder.sandbox.worker`, the warm-ups) on another core while the
    grader imports pytest and the engine, reads the submission and collects the suites,
    instead of after (``grade`` of ex1: 2.35 s -> 2.05 s on 2 cores), and it holds less of the
    grader (no pytest, no engine). A part asked for here is not asked again
    (``ForkServer.warm_up``); if the first exercise's file turns out missing, its parts were
    loaded for nothing (a few tenths of a second, in the zygote). Nothing happens in-process,
    where workers are spawned, or if the level asked for cannot be given or fork is refused
    (``choose`` and the backend say so, as before)."""
    if in_process or spawns(config):
        return
    try:
        levels.resolve(config.isolation)
    except levels.IsolationUnavailable:
        return
    from autograder.sandbox import forkserver
    try:
        forkserver.shared().warm_up(warm_up)
    except OSError:                 # fork refused (a process limit, a seccomp filter): the
        return                      # backend meets it again, and says so, as it did before


def choose(config: limits.SandboxConfig, in_process: bool = False,
           warm_up: tuple[str, ...] | None = None,
           needs: Mapping[str, tuple[str, ...]] | None = None) -> backends.WorkerBackend:
    """The backend for ``config`` (once per sandbox): in-process when asked, else spawned where
    fork is missing or unsafe (or forced), each spawned worker loading ``warm_up`` and every
    part of ``needs`` (``worker.WARM_UPS``; both None, not known: every part) before it says
    ready, else forked from the zygote at the strongest isolation level allowed
    (:mod:`levels`), the zygote loading ``warm_up`` and the first module's ``needs`` meanwhile
    and each module's before its worker (:class:`~forkserver.ForkedBackend`). ``needs``: what
    each student module's calls load on first use, in the order the suites run. A forced
    level the platform cannot give raises :class:`SandboxStartError`."""
    if in_process:
        return backends.InProcessBackend()
    try:
        if spawns(config):
            from autograder.sandbox import spawn
            name, why = levels.spawned_level(config.isolation)
            parts = warm_up if needs is None else backends.every_part(warm_up or (), needs)
            return spawn.SpawnedBackend(config, isolation.get(name), why, parts)
        name, why = levels.resolve(config.isolation)
    except levels.IsolationUnavailable as exc:
        raise SandboxStartError(str(exc)) from None
    from autograder.sandbox import forkserver
    return forkserver.ForkedBackend(config, isolation.get(name), why, warm_up or (), needs=needs)
