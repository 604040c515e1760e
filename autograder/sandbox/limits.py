"""The sandbox's configuration (:class:`SandboxConfig` and the constants the front ends
import) and the last steps of locking a worker down: rlimits and a scrubbed environment.

A worker is locked down in this order (which steps run depends on the isolation level,
``isolation.py``): new session -> [namespaces] mounts and namespaces (``mounts.py``,
``namespaces.py``) -> [namespaces, user] drop to the worker user (``users.py``), [user]
seccomp filters -> rlimits -> environment (here).

Memory is capped with ``RLIMIT_DATA`` (private writable memory), not ``RLIMIT_AS``: torch
reserves far more address space than it uses, so ``RLIMIT_AS`` breaks it.
"""
from __future__ import annotations

import argparse

import ctypes
import functools
import os
from dataclasses import dataclass, field

# Defined once here; batch.py, cli.py and check.py import them. This module must stay
# importable anywhere (Windows, macOS, no torch): POSIX-only modules (pwd, resource, libc)
# are imported inside the functions that run in the worker or as root.
WORKER_USER = "ag-student"          # the unprivileged user student code runs as (when root)
WORKER_USER_ENV = "AUTOGRADER_WORKER_USER"   # another default (the kit's tests, run in parallel)
DEFAULT_CALL_TIMEOUT = 20.0         # seconds one call into student code may take
METADATA_PATH = "/autograder/submission_metadata.json"   # Gradescope's (names, emails, ids)
METADATA_ENV = "AUTOGRADER_METADATA_PATH"                # another place for it (tests)
SHARE_ENV = "AUTOGRADER_SANDBOX_SHARE"     # folders (os.pathsep-separated) the worker shares (tests)


def default_worker_user() -> str:
    """The worker user when none is named: ``AUTOGRADER_WORKER_USER``, else ``ag-student``."""
    return os.environ.get(WORKER_USER_ENV) or WORKER_USER


@functools.lru_cache(maxsize=1)
def libc() -> ctypes.CDLL:
    """The C library (loaded once; load it before forking, ``find_library`` runs ldconfig)."""
    import ctypes.util
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


@dataclass
class SandboxConfig:
    """Limits for one worker. Times in seconds, sizes in MiB unless stated."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT   # one call (a hang costs that call)
    load_timeout: float | None = None   # importing one student module; None: max(call_timeout, 20)
    memory_mb: int = 1024               # extra private memory the worker may allocate
    max_processes: int = 64             # threads count too (per worker user, when root)
    output_limit: int = 64 * 1024       # bytes of stdout/stderr kept per worker
    file_size_mb: int = 64              # largest file the worker may write
    hide: list[str] = field(default_factory=list)   # what the worker must not see (root only)
    user: str = field(default_factory=lambda: default_worker_user())
    isolation: str = "auto"             # "auto" | "namespaces" | "user" | "process" (levels.py);
                                        # "auto" also reads AUTOGRADER_ISOLATION
    # the platform's submission metadata (names, emails): never readable by the worker
    metadata_path: str = field(default_factory=lambda: os.environ.get(METADATA_ENV) or METADATA_PATH)
    private_tmp_mb: int = 64            # size of the worker's own /tmp and /dev/shm (namespaces level)
    disk_mb: int = 256                  # files the worker may hold on the grader's disk (other levels: diskwatch.py)
    # folders bound read-write into the worker's own root (namespaces level; elsewhere they are
    # reachable by permissions anyway): for the kit's tests, where an attack proves it ran
    share: list[str] = field(default_factory=lambda: [p for p in os.environ.get(SHARE_ENV, "").split(os.pathsep) if p])
    worker_start: str = "auto"          # "fork" (zygote), "spawn" (fresh interpreter, sandbox/spawn.py),
                                        # "auto": spawn where fork is missing or unsafe (Windows, macOS)

    def __post_init__(self) -> None:
        if self.load_timeout is None:   # an import may take longer than a call, never less
            self.load_timeout = max(self.call_timeout, DEFAULT_CALL_TIMEOUT)

    def protected_paths(self) -> list[str]:
        """Everything the worker must not read: the hidden folders and the metadata file."""
        return sorted({*self.hide, self.metadata_path} - {""})


# --------------------------------------------------------------------------- limits and environment


def apply_rlimits(config: SandboxConfig, count_processes: bool = False) -> None:
    """Memory, file size, core, open files; processes too (``count_processes``) when the
    worker has a user of its own (RLIMIT_NPROC counts per user)."""
    import resource
    data_now = _current_data_bytes()
    _set(resource.RLIMIT_DATA, data_now + config.memory_mb * 1024 * 1024)
    _set(resource.RLIMIT_FSIZE, config.file_size_mb * 1024 * 1024)
    _set(resource.RLIMIT_CORE, 0)
    _set(resource.RLIMIT_NOFILE, 256)
    if count_processes:
        _set(resource.RLIMIT_NPROC, config.max_processes)


def _set(which: int, value: int) -> None:
    import resource
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    # The hard limit too, always: any process may lower its hard limit, and a soft limit
    # under a higher hard one is only advice (student code could raise it back).
    resource.setrlimit(which, (value, value))


def _current_data_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def scrub_environment() -> None:
    """Forget the grader's environment, including the copies that ``fork`` left in memory.

    ``os.environ.clear()`` alone is not enough: the worker is forked, not executed, so the
    grader's original environment strings stay on its stack (``ctypes.string_at`` finds
    them) and in the bytes objects of ``os.environ``. Zero both before student code runs.
    """
    data = getattr(os.environ, "_data", {})
    blobs = [b for pair in data.items() for b in pair if type(b) is bytes and len(b) > 1]
    os.environ.clear()                                  # unsetenv: libc stops pointing at them
    offset = bytes.__basicsize__ - 1                    # where a bytes object's characters start
    for blob in blobs:                                  # still referenced by `blobs`: alive
        ctypes.memset(id(blob) + offset, 0, len(blob))
    blobs.clear()
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])   # env_start, env_end (fields 50, 51)
    except (OSError, IndexError, ValueError):
        return
    if 0 < start < end and end - start < (1 << 24):
        ctypes.memset(start, 0, end - start)


def worker_environment(home: str) -> dict[str, str]:
    """A small, explicit environment: no secrets, single-threaded maths, headless matplotlib."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home,
           "MPLCONFIGDIR": home, "MPLBACKEND": "Agg", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = "1"
    return env


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value
