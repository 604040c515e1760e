"""One class per isolation level: what each level does, in one place, and the registry.

:mod:`levels` decides WHICH level runs (the strongest in :data:`REGISTRY` that the platform
allows, or a forced one); the classes here say WHAT each one does and whether the platform
allows it (``unavailable``). The forked backend (``forkserver.py``: its grader side and the
worker's start-up) is straight-line code that asks the level object, in this order:

    grader:  worker_ids -> prepare_home -> check_files -> [worker runs] -> sweep
    worker:  enter -> drop_user -> rlimits -> confine -> filter_syscalls -> serve

| step               | namespaces                         | user                                  | landlock | process | in-process |
|--------------------|------------------------------------|---------------------------------------|----------|---------|------------|
| worker user        | yes                                | yes                                   | no       | no      | no         |
| enter              | mount/net/pid/IPC namespaces, a root of its own (allowlist.py) | -        | -        | -       | -          |
| check_files        | -                                  | kit unreadable to the worker user (harden.py), else refuse | - | - | -     |
| confine            | -                                  | -                                     | Landlock file rules, signals and abstract sockets scoped | - | - |
| filter_syscalls    | vsock and other families that cross a namespace refused | sockets but AF_UNIX refused, IPC refused | sockets but AF_UNIX refused, no connect | the same | - |
|   (all four levels) | execve, memfd, keyrings, user namespaces; a file's mode, owner, times, xattrs and inode flags; watches and leases | the same | the same | the same | - |
| RLIMIT_NPROC       | yes (own user)                     | yes (own user)                        | no       | no      | no         |
| sweep              | the user's processes in its pid namespace | the user's processes, files, IPC objects | its temp folder | - | -  |

Adding a level: its class here (its kernel facilities in a module of their own, as
:mod:`landlock` for :class:`LandlockLevel`) and its place in :func:`registry`. Nothing
outside this module and :mod:`levels` compares level names.
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar

# Worker-side modules are imported HERE, at module level: the worker uses them after it has
# entered its own root, where the kit's files are no longer visible (no lazy imports there).
# (frames, not wire: choosing and describing a level loads no torch, see frames.py)
from autograder.sandbox import frames, ipc, landlock, lifetime, limits, namespaces, netfilter, users, writable
from autograder.sandbox.users import WorkerIds

if TYPE_CHECKING:
    from autograder.sandbox import protocol
    from autograder.sandbox.forkserver import WorkerSpec

IN_PROCESS = "in-process"


class Level:
    """The process level: a separate process with limits, as the grader's own user."""
    name: ClassVar[str] = "process"
    description: ClassVar[str] = (
        "student code runs in a separate process with time and memory limits, as the same user "
        "as the grader, with no socket but AF_UNIX and no other program started where a seccomp "
        "filter is available (no user or namespace isolation, no file-system restriction)")
    worker_user: ClassVar[bool] = False       # the worker runs as the unprivileged worker user
    own_pid_namespace: ClassVar[bool] = False  # the worker is pid 1 of a pid namespace of its own
    network_isolated: ClassVar[bool] = False  # a network namespace of its own
    sweep_at_zygote_exit: ClassVar[bool] = False   # the zygote sweeps again when it ends (a dead grader)
    home_on_disk: ClassVar[bool] = True   # the worker writes to a folder on the grader's disk (diskwatch.py)

    # ---------------------------------------------------------------- availability
    @classmethod
    def unavailable(cls) -> str | None:
        """None when this platform allows the level, else why not (probed once: levels.detect)."""
        return None

    @classmethod
    def available_because(cls, refused: dict[str, str]) -> str:
        """Why the level runs here, given why the platform refused the stronger ones (the
        log's ``isolation: <level> — <why>``)."""
        if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
            return f"no user or namespace isolation on {sys.platform} (or without fork)"
        landlock = refused.get("landlock")
        return "the grader is not running as root" + (f", and {landlock}" if landlock else "")

    # ---------------------------------------------------------------- grader side
    def worker_ids(self, config: limits.SandboxConfig) -> WorkerIds | None:
        """The worker user's ids (made if missing), or None when the worker keeps our user."""
        if not self.worker_user:
            return None
        return users.ensure_user(config.user)

    def prepare_home(self, home: str, ids: WorkerIds | None) -> None:
        """The worker's home folder: its own, private."""
        if ids is not None:
            os.chown(home, ids.uid, ids.gid)
        os.chmod(home, 0o700)

    def check_files(self, config: limits.SandboxConfig, ids: WorkerIds | None) -> list[str]:
        """Before any student code: what must be unreadable is (paths locked here); raise
        ``SandboxStartError`` when it cannot be made so."""
        return []

    def sweep(self, ids: WorkerIds | None, namespace: str | None, confined: bool = False,
              shared: tuple[str, ...] = ()) -> None:
        """After a worker: nothing of it may stay (processes, files, kernel objects).
        ``confined``: its start-up said it can write nothing but its own home (Landlock);
        ``shared``: folders the worker was given on purpose (``SandboxConfig.share``), kept."""

    def network_note(self, ready: protocol.Ready) -> str | None:
        """A sentence for the log when the network is less blocked than this level promises."""
        return None

    def neighbour_note(self, submissions: Path, closed: dict[str, int],
                       readable: Callable[[], list[str]]) -> str | None:
        """batch's summary: what student code graded at this level could see of the other
        submissions in ``submissions`` (``closed``: folder -> its own mode, for the folders
        ``jobs.KeptModes`` closed while the batch ran; ``readable()``: which of them the worker
        users can read, checked when asked)."""
        return ("neighbours READABLE: graded at the process level (not root), student code runs "
                f"as your own user and can read the other submissions in {submissions}")

    def root_note(self, ready: protocol.Ready) -> str | None:
        """A sentence for the log when the worker's root is weaker than this level promises."""
        return None

    # ---------------------------------------------------------------- worker side
    def enter(self, sock: socket.socket, cfg: limits.SandboxConfig, spec: "WorkerSpec") -> tuple[str, bool]:
        """Enter what isolates the worker; reports the worker's pid on ``sock``.
        Returns (how the root was made, whether an IPC namespace of its own bounds IPC)."""
        frames.send(sock, {"pid": os.getpid()})
        return "shared", False

    def drop_user(self, spec: "WorkerSpec") -> None:
        if self.worker_user and spec.ids is not None:
            users.drop_privileges(spec.ids)

    def rlimits(self, cfg: limits.SandboxConfig) -> None:
        limits.apply_rlimits(cfg, count_processes=self.worker_user)   # per-uid count: our own user only

    def confine(self, cfg: limits.SandboxConfig, spec: "WorkerSpec", root: str) -> bool:
        """Restrict what the worker may touch beyond its user's permissions (a file-system
        ruleset; ``root``: how its root was made); whether a ruleset is on."""
        return False

    def filter_syscalls(self, ipc_bounded: bool) -> bool:
        """Install the seccomp filter (needs no root: ``no_new_privs``): no socket but AF_UNIX,
        no connect, no IPC, no other program; whether it is on."""
        return netfilter.block_network(refuse_ipc=True, refuse_connect=True)


class UserLevel(Level):
    """Root without namespaces (Docker's defaults, Gradescope): the worker user, protected by
    ownership and permissions."""
    name = "user"
    description = ("student code runs as an unprivileged user; the kit, hidden tests, submission, "
                   "results and submission metadata are unreadable to it by ownership and "
                   "permissions (checked before grading); no private namespaces; no socket but "
                   "AF_UNIX and no System V / POSIX IPC (a seccomp filter)")
    worker_user = True
    sweep_at_zygote_exit = True   # the zygote sweeps too when it ends: even a killed grader leaves nothing

    @classmethod
    def unavailable(cls) -> str | None:
        if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
            return f"no worker user on {sys.platform} (or without fork)"
        if os.geteuid() != 0:
            return "the grader is not running as root"
        return None

    @classmethod
    def available_because(cls, refused: dict[str, str]) -> str:
        return f"root, but {refused.get('namespaces', 'private namespaces are refused here')}"

    def check_files(self, config: limits.SandboxConfig, ids: WorkerIds | None) -> list[str]:
        from autograder.sandbox import harden
        from autograder.sandbox.errors import SandboxStartError
        assert ids is not None
        blocked = harden.unreadable_interpreter(ids.uid, ids.gid)
        if blocked:
            raise SandboxStartError(
                f"isolation level 'user': the worker user {config.user!r} cannot read the "
                f"interpreter's files ({', '.join(blocked)}); install Python outside a private "
                "home folder, or grade where namespaces are allowed")
        try:
            return harden.ensure_unreadable(config.protected_paths(), ids.uid, ids.gid)
        except harden.StillReadable as exc:
            raise SandboxStartError(f"isolation level 'user': {exc}") from None

    def sweep(self, ids: WorkerIds | None, namespace: str | None, confined: bool = False,
              shared: tuple[str, ...] = ()) -> None:
        """No namespace: kill whatever still runs as the worker user (every grader has a worker
        user of its own: users.claim), then remove what it left in the kernel (System V IPC
        objects, POSIX message queues) and in every place it could write: its home alone where
        Landlock confined it, else every directory the user may write (writable.places)."""
        if ids is None or ids.uid == 0:
            return
        steps = [lambda: lifetime.kill_all_of_user(ids.uid, ids.gid), lambda: ipc.sweep_user(ids.uid)]
        if not confined:
            steps.append(lambda: users.remove_user_files(ids.uid, _unshared(writable.places(ids.uid, ids.gid), shared)))
        for step in steps:
            try:                                   # a failed step is staff's news, never a grade's
                step()
            except Exception as exc:  # noqa: BLE001
                users.staff_note(f"sweep: uid {ids.uid}: {type(exc).__name__}: {exc}")

    def confine(self, cfg: limits.SandboxConfig, spec: "WorkerSpec", root: str) -> bool:
        """Writes to its own home only, reads of what Python needs only, where the kernel has
        Landlock; else the sweep covers every place it can write."""
        return landlock.confine_if_available(cfg, spec)

    def neighbour_note(self, submissions: Path, closed: dict[str, int],
                       readable: Callable[[], list[str]]) -> str | None:
        if closed:
            listed = ", ".join(f"{p} (mode {m:04o})" for p, m in closed.items())
            return (f"neighbours not readable: at the user level only permissions keep the worker users "
                    f"out, so while the batch ran these folders were closed to group and others: "
                    f"{listed}; their modes were put back when it ended")
        seen = readable()
        if seen:
            return f"neighbours READABLE: at the user level the worker users can read {', '.join(seen)}"
        return f"neighbours not readable: at the user level the worker users cannot read {submissions} (checked)"

    def network_note(self, ready: protocol.Ready) -> str | None:
        if ready.network_blocked:
            return None
        return ("isolation: user — the network is NOT blocked at this level (no seccomp filter on "
                "this platform)")

    def filter_syscalls(self, ipc_bounded: bool) -> bool:
        return netfilter.block_network(refuse_ipc=not ipc_bounded, refuse_connect=True)


class NamespacesLevel(UserLevel):
    """Root with CAP_SYS_ADMIN: the worker user in namespaces of its own, a root of its own."""
    name = "namespaces"
    description = ("student code runs as an unprivileged user in private mount, network and pid "
                   "namespaces, in a root of its own holding only what Python and its libraries "
                   "need, with private size-capped /tmp and /dev/shm; the kit, hidden tests, "
                   "submission, results and other processes are not visible to it")
    own_pid_namespace = True
    network_isolated = True
    sweep_at_zygote_exit = False
    home_on_disk = False          # its root, home included, is a size-capped tmpfs

    @classmethod
    def unavailable(cls) -> str | None:
        refused = super().unavailable()
        if refused is not None:
            return refused
        probe = namespaces.probe()
        return None if probe is None else f"private namespaces are refused here ({probe})"

    @classmethod
    def available_because(cls, refused: dict[str, str]) -> str:
        return "root, and private namespaces and mounts are allowed"

    def check_files(self, config: limits.SandboxConfig, ids: WorkerIds | None) -> list[str]:
        return []                 # the worker's own root shows it nothing to lock

    def sweep(self, ids: WorkerIds | None, namespace: str | None, confined: bool = False,
              shared: tuple[str, ...] = ()) -> None:
        if ids is not None:
            lifetime.kill_user_processes(ids.uid, namespace)

    def confine(self, cfg: limits.SandboxConfig, spec: "WorkerSpec", root: str) -> bool:
        """Its own root holds nothing else it can write; without one (bind mounts refused, the
        kit hidden by mounts instead, every place it can write made private) Landlock confines
        it too where the kernel has it."""
        if root != "hidden":
            return False
        return landlock.confine_if_available(cfg, spec)

    def neighbour_note(self, submissions: Path, closed: dict[str, int],
                       readable: Callable[[], list[str]]) -> str | None:
        return (f"neighbours hidden: {submissions} and the output folder are hidden from every worker "
                "(namespaces level); each job grades a private copy")

    def network_note(self, ready: protocol.Ready) -> str | None:
        return None

    def root_note(self, ready: protocol.Ready) -> str | None:
        if ready.root != "hidden":
            return None
        return ("isolation: namespaces — no root of its own for the worker here (bind mounts or "
                "pivot_root refused); the kit and submission are hidden by mounts instead, the "
                "rest of the file system is visible (read-only for it where permissions say so)")

    def enter(self, sock: socket.socket, cfg: limits.SandboxConfig, spec: "WorkerSpec") -> tuple[str, bool]:
        return namespaces.enter(sock, cfg, spec)    # continues as pid 1 of a new pid namespace

    def filter_syscalls(self, ipc_bounded: bool) -> bool:
        # The private network namespace already leaves nothing to reach over INET sockets: only
        # the families that cross a network namespace (vsock, …) are refused here.
        return netfilter.block_crossing_families()


class LandlockLevel(Level):
    """Not root, Linux with Landlock: a separate process as the grader's own user, confined."""
    name: ClassVar[str] = "landlock"
    description: ClassVar[str] = (
        "student code runs in a separate process with time and memory limits, as the grader's "
        "own user, confined by Landlock: it may read only what Python and its libraries need "
        "(not your home folder, the kit, the hidden tests, the class folder or the results) and "
        "write only its own temporary folder; it cannot signal or trace other processes; a "
        "seccomp filter allows no socket but AF_UNIX, no connect, no System V / POSIX IPC, no "
        "change to any file's mode, owner, times, extended attributes or inode flags, and no "
        "inotify watch or lease")

    @classmethod
    def unavailable(cls) -> str | None:
        if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
            return f"Landlock is Linux's ({sys.platform})"
        if landlock.abi() < 1:
            return "Landlock is missing or disabled in this kernel (Linux 5.13 or later, lsm=landlock)"
        if netfilter.program() is None:
            return "no seccomp filter is known for this machine"
        return None

    @classmethod
    def available_because(cls, refused: dict[str, str]) -> str:
        return (f"the grader is not running as root; Landlock (ABI {landlock.abi()}) and a seccomp filter "
                "confine the worker")

    def neighbour_note(self, submissions: Path, closed: dict[str, int],
                       readable: Callable[[], list[str]]) -> str | None:
        return (f"neighbours not readable: at the landlock level (not root) the workers may read only "
                f"what Python and its libraries need, not {submissions} or the output folder")

    def confine(self, cfg: limits.SandboxConfig, spec: "WorkerSpec", root: str) -> bool:
        if os.geteuid() == 0:           # forced on a root grader (auto picks user or namespaces)
            landlock.drop_capabilities()
        landlock.confine_worker(cfg, spec)
        return True


class InProcessLevel(Level):
    """Benchmarks and the interop adapter: student code in the grader's own process."""
    name = IN_PROCESS
    description = ("the student's code ran inside the grading process (no worker process, no time "
                   "limits)")

    def neighbour_note(self, submissions: Path, closed: dict[str, int],
                       readable: Callable[[], list[str]]) -> str | None:
        return None


def registry() -> tuple[type[Level], ...]:
    """Every level a grader can run at, strongest first: levels.detect() runs the first one
    the platform allows."""
    return (NamespacesLevel, UserLevel, LandlockLevel, Level)


def names() -> tuple[str, ...]:
    """The levels a grader can run at, strongest first."""
    return tuple(cls.name for cls in registry())


def get(name: str) -> Level:
    """The level object for a level name (see :func:`names`, and "in-process")."""
    for cls in (*registry(), InProcessLevel):
        if cls.name == name:
            return cls()
    raise ValueError(f"unknown isolation level {name!r}")


def in_report_order() -> list[Level]:
    """Every level, weakest first (the order batch's summary reports them in)."""
    return [cls() for cls in reversed(registry())]


def announce_once(message: str | None, said: set[str]) -> None:
    """Print a level's note to stderr once (``said`` remembers)."""
    if message and message not in said:
        said.add(message)
        print(message, file=sys.stderr, flush=True)


def _unshared(places: list[str], shared: tuple[str, ...]) -> tuple[str, ...]:
    """The writable places outside ``shared`` (folders another grader's workers use too)."""
    return tuple(p for p in places if not any(p == s or p.startswith(s.rstrip("/") + "/") for s in shared))
