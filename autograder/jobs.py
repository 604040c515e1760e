"""Batch jobs that cannot reach each other.

* :func:`job_key` and :func:`write_job` - a grader is started with an opaque job key: its
  command line names a root-owned 0600 job file (in the 0700 stage folder) that holds the
  paths, so nothing a classmate's worker can read in ``/proc/*/cmdline`` (or ``cgroup``)
  holds a student's name or folder; :func:`read_job` is ``grade --job``'s side.
* :class:`KeptModes` - at the ``user`` level nothing but permissions keeps the worker users
  out of the class folder: for the batch's duration the folders a worker must not read lose
  their group/other permission bits, and get their exact mode back when it ends.

* :func:`stage_copy` - each student is graded from a private copy of their submission, in a
  root-owned 0700 folder (:func:`private_folder`), copied without following links and with
  bounded size, so a job's grader is never pointed at the class folder.
* :func:`readable_by` - whether a worker user can read a path (a probe process that drops to
  that user), to say in the batch summary whether neighbours are readable at the ``user``
  level (the class folder is the TA's: the kit never changes its permissions).
* :class:`MemoryGroups` - one memory cgroup per job (v1 or v2, where writable), so one
  submission's memory use cannot get another job's worker killed; where there is none,
  :func:`memory_share_mb` divides the available memory between the jobs instead.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import stat
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Sequence

from autograder import filetree

STAGE_MAX_BYTES = 64 * 1024 * 1024     # a submission's copy (intake's own cap is lower)
STAGE_MAX_ENTRIES = 5_000
STAGE_MAX_DEPTH = 12
GRADER_OVERHEAD_MB = 700               # one grader process (torch, pytest, suites) besides its worker
CGROUP_ROOT = Path("/sys/fs/cgroup")


class StagingError(RuntimeError):
    """The submission could not be copied (too large, too many files, unreadable)."""


# --------------------------------------------------------------------------- private copies

def private_folder(prefix: str = "ag-batch-") -> Path:
    """A new folder only its owner can enter (root's, when the batch runs as root)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, 0o700)
    return path


def stage_bounds() -> filetree.Bounds:
    """How far a submission's copy (and its digest, :mod:`autograder.batching.resume`) goes."""
    return filetree.Bounds(depth=STAGE_MAX_DEPTH, entries=STAGE_MAX_ENTRIES, bytes=STAGE_MAX_BYTES)


def stage_copy(source: Path, dest: Path, file_name: str | None = None) -> list[str]:
    """Copy a submission (folder or single file, e.g. a zip, then named ``file_name`` when
    given) to ``dest`` (created).

    Links are never followed: symbolic links are recreated as links (intake refuses them
    with a message naming the file), files with several hard links, FIFOs and devices are
    skipped, folders deeper than :data:`STAGE_MAX_DEPTH` are copied empty. The walk is
    :func:`autograder.filetree.walk` (no recursion, any depth). Raises :class:`StagingError`
    past :data:`STAGE_MAX_BYTES` or :data:`STAGE_MAX_ENTRIES`. Returns what was skipped
    (one line each).
    """
    info = os.lstat(source)
    dest.mkdir(parents=True)
    os.chmod(dest, 0o700)
    skipped: list[str] = []
    if not stat.S_ISDIR(info.st_mode):
        _copy_file(source, info, dest / (file_name or source.name), skipped, source.name, _path_opener(source))
        return skipped
    try:
        for entry in filetree.walk(source, stage_bounds()):
            target = dest / entry.rel
            if entry.kind is filetree.Kind.FOLDER:
                target.mkdir()
                if entry.too_deep:
                    skipped.append(f"{entry.rel}/ (nested too deep)")
            else:
                _copy_file(Path(entry.rel), entry.info, target, skipped, entry.name, entry.open,
                           link=lambda e=entry: os.readlink(e.name, dir_fd=e.dir_fd))
    except filetree.TooLarge as exc:
        raise StagingError(f"the submission {exc}") from None
    except OSError as exc:
        raise StagingError(f"{source.name} could not be copied ({type(exc).__name__})") from None
    return skipped


def _path_opener(path: Path):
    return lambda: os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))


def _copy_file(src: Path, info: os.stat_result, target: Path, skipped: list[str], name: str,
               opener, link=None) -> None:
    """One entry that is not a folder: a link recreated, a plain file copied (``opener()``
    gives its descriptor), anything else skipped."""
    if stat.S_ISLNK(info.st_mode):
        os.symlink(link() if link else os.readlink(src), target)     # copied as a link, never followed
        return
    if not stat.S_ISREG(info.st_mode):
        skipped.append(f"{name} (not a regular file)")
        return
    if info.st_nlink > 1:
        skipped.append(f"{name} (a hard link)")
        return
    if info.st_size > STAGE_MAX_BYTES:
        raise StagingError(f"the submission is larger than {STAGE_MAX_BYTES // (1024 * 1024)} MB")
    with os.fdopen(opener(), "rb") as reader, open(target, "wb") as writer:
        shutil.copyfileobj(reader, writer)
        if writer.tell() > info.st_size:                 # grew while copied
            raise StagingError(f"{name} changed while it was copied")


# --------------------------------------------------------------------------- job files

JOB_FIELDS = {"submission": str, "results": str, "hide": list}


def job_key() -> str:
    """An opaque, unique name for one grading job (no student name or path in it)."""
    return "job-" + secrets.token_hex(6)


def write_job(folder: Path, key: str, submission: Path, results: Path, hide: Sequence[str]) -> Path:
    """``<folder>/<key>.json``, 0600 (the batch's, i.e. root's, when run as root): what
    ``grade --job`` grades and where it writes. Paths are kept exactly (JSON escapes any
    undecodable byte of a file name as a surrogate, which :func:`read_job` gives back)."""
    path = Path(folder) / f"{key}.json"
    data = {"submission": os.fsdecode(submission), "results": os.fsdecode(results),
            "hide": [os.fsdecode(h) for h in hide]}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        json.dump(data, handle)                       # ensure_ascii: every name survives
    return path


def read_job(path: str | Path) -> dict[str, Any]:
    """A job file written by :func:`write_job`; ``ValueError`` for anything else."""
    with open(path, encoding="ascii") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or any(not isinstance(data.get(k), t) for k, t in JOB_FIELDS.items()) \
            or not all(isinstance(h, str) for h in data["hide"]):
        raise ValueError(f"{path} is not a job file")
    return data


class KeptModes:
    """Folders closed to group and others while a batch runs, their exact mode put back after.

    Root only (a worker user exists only then); a folder that is already closed is left alone.
    ``changed`` says which were closed and what their modes were."""

    def __init__(self, paths: Sequence[Path]):
        self.paths = list(dict.fromkeys(Path(p) for p in paths))
        self.changed: dict[Path, int] = {}

    def close(self) -> "KeptModes":
        if os.geteuid() != 0:
            return self
        from autograder.sandbox.harden import interpreter_roots

        keep = interpreter_roots()                    # a folder holding the interpreter stays open
        for path in self.paths:
            try:
                info = os.stat(path)
            except OSError:
                continue
            real = os.path.realpath(path)
            if any(k == real or k.startswith(real.rstrip("/") + "/") for k in keep):
                continue
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISDIR(info.st_mode) and mode & 0o077:
                os.chmod(path, mode & 0o700)
                self.changed[path] = mode
        return self

    def restore(self) -> None:
        for path, mode in self.changed.items():
            try:
                os.chmod(path, mode)
            except OSError:
                pass

    def __enter__(self) -> "KeptModes":
        return self.close()

    def __exit__(self, *exc: object) -> None:
        self.restore()


def neighbour_notes(levels: set[str], submissions: Path, kept: KeptModes, memory: "MemoryGroups",
                    memory_mb: int, worker_user: str) -> list[str]:
    """What student code could see of other submissions, and how memory was shared, by level."""
    from autograder.sandbox import isolation
    notes = [note for level in isolation.in_report_order() if level.name in levels
             for note in [level.neighbour_note(submissions, kept.changed,
                                               lambda: readable_by(worker_user, [submissions]))] if note]
    if memory.kind:
        notes.append(f"memory: each job in its own {memory.kind} memory group of {memory.limit_mb} MB")
    else:
        notes.append(f"memory: no memory cgroup available; each worker may allocate {memory_mb} MB "
                     "(the available memory shared between the jobs)")
    return notes


# --------------------------------------------------------------------------- who can read what

def readable_by(user: str, paths: list[Path]) -> list[str]:
    """Of ``paths``, those the (existing) ``user`` can read or list. Root only: a forked probe
    drops to the user (never dumpable: :mod:`autograder.sandbox.asuser`) and tries; [] when
    not root or the user does not exist."""
    if os.geteuid() != 0 or not paths:
        return []
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return []
    from autograder.sandbox.asuser import run_as_user

    def probe() -> bytes:
        return "\n".join(str(p) for p in paths if _can_read(p)).encode()

    data = run_as_user(entry.pw_uid, entry.pw_gid, probe)
    if data is None:
        return [str(p) for p in paths]                   # the probe failed: assume the worst
    return [line for line in data.decode().splitlines() if line]


def _can_read(path: Path) -> bool:
    try:
        if path.is_dir():
            os.listdir(path)
        else:
            with open(path, "rb") as handle:
                handle.read(1)
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------- memory per job

class MemoryGroups:
    """One memory cgroup per job under this process's own cgroup, where the kernel lets us.

    ``kind`` is ``"cgroup v1"``, ``"cgroup v2"`` or ``None`` (none available: the caller
    falls back to :func:`memory_share_mb`).
    """

    def __init__(self, limit_mb: int):
        self.limit_mb = int(limit_mb)
        self.base, self.kind, self._limit_file = self._find()
        self._tag = f"ag-batch-{os.getpid()}-{uuid.uuid4().hex[:6]}"

    @staticmethod
    def _find() -> tuple[Path | None, str | None, str]:
        if os.geteuid() != 0:
            return None, None, ""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None, None, ""
        for line in lines:                               # v1: "4:memory:/path"
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                base = CGROUP_ROOT / "memory" / path.lstrip("/")
                if (base / "memory.limit_in_bytes").exists() and os.access(base, os.W_OK):
                    return base, "cgroup v1", "memory.limit_in_bytes"
        for line in lines:                               # v2: "0::/path"
            if line.startswith("0::"):
                root = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else CGROUP_ROOT / "unified"
                base = root / line[3:].lstrip("/")
                try:
                    enabled = (base / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                if "memory" in enabled and os.access(base, os.W_OK):
                    return base, "cgroup v2", "memory.max"
        return None, None, ""

    def create(self, name: str) -> Path | None:
        """A new group for one job, with the memory limit set; None if that fails."""
        if self.base is None:
            return None
        group = self.base / f"{self._tag}-{name}"
        try:
            group.mkdir()
            (group / self._limit_file).write_text(str(self.limit_mb * 1024 * 1024))
            if self.kind == "cgroup v1" and (group / "memory.memsw.limit_in_bytes").exists():
                try:                                     # no escape into swap either
                    (group / "memory.memsw.limit_in_bytes").write_text(str(self.limit_mb * 1024 * 1024))
                except OSError:
                    pass
            return group
        except OSError:
            self.remove(group)
            return None

    @staticmethod
    def wrap(command: list[str], group: Path | None) -> list[str]:
        """``command`` started inside ``group`` (the shell joins it, then execs the command)."""
        if group is None:
            return command
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group), *command]

    @staticmethod
    def oom_killed(group: Path | None) -> bool:
        """Whether the kernel killed something in the group for memory (v1 failcnt / v2 events)."""
        if group is None:
            return False
        for name, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
            try:
                for line in (group / name).read_text().splitlines():
                    field, _, value = line.partition(" ")
                    if field == key and value.strip().isdigit() and int(value) > 0:
                        return True
            except OSError:
                continue
        return False

    @staticmethod
    def remove(group: Path | None, wait_s: float = 2.0) -> None:
        """Remove ``group`` once it is empty: the processes of a job that just ended (its zygote
        and workers, which die with its grader) may take a moment to leave it."""
        if group is None:
            return
        deadline = time.monotonic() + wait_s
        while True:
            try:
                group.rmdir()
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return
            time.sleep(0.02)


def memory_share_mb(jobs: int, wanted_mb: int) -> int:
    """Without cgroups: what each job's worker may allocate so that ``jobs`` graders and their
    workers fit into the memory available now (never more than ``wanted_mb``, at least 256)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available_mb = int(line.split()[1]) // 1024
                share = available_mb // max(1, jobs) - GRADER_OVERHEAD_MB
                return max(256, min(wanted_mb, share))
    except (OSError, ValueError):
        pass
    return wanted_mb
