"""One class per isolation level: what each level does, in one place.

:mod:`levels` decides WHICH level runs (probe, forcing, refusal); the classes here say WHAT
each one does. The grader (``session.py``) and the worker's start-up (``forkserver.py``) are
straight-line code that asks the level object, in this order:

    grader:  worker_ids -> prepare_home -> check_files -> [worker runs] -> sweep
    worker:  enter -> drop_user -> rlimits -> filter_syscalls -> serve

| step               | namespaces                         | user                                  | process | in-process |
|--------------------|------------------------------------|---------------------------------------|---------|------------|
| worker user        | yes                                | yes                                   | no      | no         |
| enter              | mount/net/pid/IPC namespaces, a root of its own (allowlist.py) | -        | -       | -          |
| check_files        | -                                  | kit unreadable to the worker user (harden.py), else refuse | - | - |
| filter_syscalls    | sockets by allowlist               | sockets by allowlist, IPC refused     | -       | -          |
| RLIMIT_NPROC       | yes (own user)                     | yes (own user)                        | no      | no         |
| sweep              | the user's processes in its pid namespace | all of the user's processes, files, IPC objects | - | -     |

Nothing outside this module compares level names: code asks ``isolation.get(name)``.
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Callable, ClassVar

# Worker-side modules are imported HERE, at module level: the worker uses them after it has
# entered its own root, where the kit's files are no longer visible (no lazy imports there).
from autograder.sandbox import ipc, levels, lifetime, limits, namespaces, netfilter, users, wire


class Level:
    """The process level: a separate process with limits, as the grader's own user."""
    name: ClassVar[str] = "process"
    worker_user: ClassVar[bool] = False       # the worker runs as the unprivileged worker user
    network_isolated: ClassVar[bool] = False  # a network namespace of its own
    sweep_in_zygote: ClassVar[bool] = False   # the zygote sweeps after each worker too

    @property
    def description(self) -> str:
        return levels.describe_level(self.name)

    # ---------------------------------------------------------------- grader side
    def worker_ids(self, config: limits.SandboxConfig) -> dict:
        """The worker user's ids (made if missing), or {} when the worker keeps our user."""
        if not self.worker_user:
            return {}
        uid, gid = users.ensure_user(config.user)
        return {"uid": uid, "gid": gid}

    def prepare_home(self, home: str, ids: dict) -> None:
        """The worker's home folder: its own, private."""
        if self.worker_user:
            os.chown(home, ids["uid"], ids["gid"])
        os.chmod(home, 0o700)

    def check_files(self, config: limits.SandboxConfig, ids: dict) -> list[str]:
        """Before any student code: what must be unreadable is (paths locked here); raise
        ``SandboxStartError`` when it cannot be made so."""
        return []

    def sweep(self, ids: dict, namespace: str | None) -> None:
        """After a worker: nothing of it may stay (processes, files, kernel objects)."""

    def network_note(self, blocked: bool) -> str | None:
        """A sentence for the log when the network is less blocked than this level promises."""
        return None

    def neighbour_note(self, submissions: Path, closed: dict, readable: Callable[[], list[str]]) -> str | None:
        """batch's summary: what student code graded at this level could see of the other
        submissions in ``submissions`` (``closed``: folder -> its own mode, for the folders
        ``jobs.KeptModes`` closed while the batch ran; ``readable()``: which of them the worker
        users can read, checked when asked)."""
        return ("neighbours READABLE: graded at the process level (not root), student code runs "
                f"as your own user and can read the other submissions in {submissions}")

    def root_note(self, root: str) -> str | None:
        """A sentence for the log when the worker's root is weaker than this level promises."""
        return None

    # ---------------------------------------------------------------- worker side
    def enter(self, sock: socket.socket, cfg: limits.SandboxConfig, config: dict) -> tuple[str, bool]:
        """Enter what isolates the worker; reports the worker's pid on ``sock``.
        Returns (how the root was made, whether an IPC namespace of its own bounds IPC)."""
        wire.send(sock, {"pid": os.getpid()})
        return "shared", False

    def drop_user(self, config: dict) -> None:
        if self.worker_user:
            users.drop_privileges(config["uid"], config["gid"])

    def rlimits(self, cfg: limits.SandboxConfig) -> None:
        limits.apply_rlimits(cfg, count_processes=self.worker_user)   # per-uid count: our own user only

    def filter_syscalls(self, ipc_bounded: bool) -> bool:
        """Install the seccomp filter (sockets by allowlist; IPC refused unless an IPC
        namespace of its own holds it); whether it is on."""
        if not self.worker_user:
            return False
        return netfilter.block_network(refuse_ipc=not ipc_bounded)


class UserLevel(Level):
    """Root without namespaces (Docker's defaults, Gradescope): the worker user, protected by
    ownership and permissions."""
    name = "user"
    worker_user = True

    def check_files(self, config: limits.SandboxConfig, ids: dict) -> list[str]:
        from autograder.sandbox import harden
        from autograder.sandbox.errors import SandboxStartError
        uid, gid = ids["uid"], ids["gid"]
        blocked = harden.unreadable_interpreter(uid, gid)
        if blocked:
            raise SandboxStartError(
                f"isolation level 'user': the worker user {config.user!r} cannot read the "
                f"interpreter's files ({', '.join(blocked)}); install Python outside a private "
                "home folder, or grade where namespaces are allowed")
        try:
            return harden.ensure_unreadable(config.protected_paths(), uid, gid)
        except harden.StillReadable as exc:
            raise SandboxStartError(f"isolation level 'user': {exc}") from None

    sweep_in_zygote = True        # the zygote sweeps too: even a killed grader leaves nothing

    def sweep(self, ids: dict, namespace: str | None) -> None:
        """No namespace: kill whatever still runs as the worker user, then remove what it left
        in the kernel (System V IPC objects, POSIX message queues) and at the top of the shared
        scratch folders. (Parallel graders use different worker users.)"""
        if not ids or ids["uid"] == 0:
            return
        for step in (lambda: lifetime.kill_all_of_user(ids["uid"], ids["gid"]),
                     lambda: ipc.sweep_user(ids["uid"]), lambda: users.remove_user_files(ids["uid"])):
            try:                                   # a failed step is staff's news, never a grade's
                step()
            except Exception as exc:  # noqa: BLE001
                users.staff_note(f"sweep: uid {ids['uid']}: {type(exc).__name__}: {exc}")

    def neighbour_note(self, submissions: Path, closed: dict, readable: Callable[[], list[str]]) -> str | None:
        if closed:
            listed = ", ".join(f"{p} (mode {m:04o})" for p, m in closed.items())
            return (f"neighbours not readable: at the user level only permissions keep the worker users "
                    f"out, so while the batch ran these folders were closed to group and others: "
                    f"{listed}; their modes were put back when it ended")
        seen = readable()
        if seen:
            return f"neighbours READABLE: at the user level the worker users can read {', '.join(seen)}"
        return f"neighbours not readable: at the user level the worker users cannot read {submissions} (checked)"

    def network_note(self, blocked: bool) -> str | None:
        if blocked:
            return None
        return ("isolation: user — the network is NOT blocked at this level (no seccomp filter on "
                "this platform)")


class NamespacesLevel(Level):
    """Root with CAP_SYS_ADMIN: the worker user in namespaces of its own, a root of its own."""
    name = "namespaces"
    worker_user = True
    network_isolated = True

    def sweep(self, ids: dict, namespace: str | None) -> None:
        if ids:
            lifetime.kill_user_processes(ids["uid"], namespace)

    def neighbour_note(self, submissions: Path, closed: dict, readable: Callable[[], list[str]]) -> str | None:
        return (f"neighbours hidden: {submissions} and the output folder are hidden from every worker "
                "(namespaces level); each job grades a private copy")

    def root_note(self, root: str) -> str | None:
        if root != "hidden":
            return None
        return ("isolation: namespaces — no root of its own for the worker here (bind mounts or "
                "pivot_root refused); the kit and submission are hidden by mounts instead, the "
                "rest of the file system is visible (read-only for it where permissions say so)")

    def enter(self, sock: socket.socket, cfg: limits.SandboxConfig, config: dict) -> tuple[str, bool]:
        return namespaces.enter(sock, cfg, config)    # continues as pid 1 of a new pid namespace


class InProcessLevel(Level):
    """Benchmarks and the interop adapter: student code in the grader's own process."""
    name = "in-process"

    @property
    def description(self) -> str:
        return ("the student's code ran inside the grading process (no worker process, no time "
                "limits)")

    def neighbour_note(self, submissions: Path, closed: dict, readable: Callable[[], list[str]]) -> str | None:
        return None


_CLASSES: dict[str, type[Level]] = {cls.name: cls for cls in (NamespacesLevel, UserLevel, Level, InProcessLevel)}


def get(name: str) -> Level:
    """The level object for a level name ("namespaces", "user", "process", "in-process")."""
    try:
        return _CLASSES[name]()
    except KeyError:
        raise ValueError(f"unknown isolation level {name!r}") from None


def in_report_order() -> list[Level]:
    """Every level, weakest first (the order batch's summary reports them in)."""
    return [get(name) for name in ("process", "user", "namespaces")]


def announce_once(message: str | None, said: set[str]) -> None:
    """Print a level's note to stderr once (``said`` remembers)."""
    if message and message not in said:
        said.add(message)
        print(message, file=sys.stderr, flush=True)
