"""Locking the worker down: unprivileged user, namespaces, hidden folders, rlimits.

Everything here runs in the freshly forked worker before any student code, in this order
(which steps run depends on the isolation level, see levels.py):

    new session -> [namespaces] new mount + network + pid namespaces, private /tmp and
    /dev/shm, hide kit folders, fresh /proc -> [namespaces, user] drop to the unprivileged
    user, [user] seccomp network filter -> rlimits -> environment

Memory is capped with ``RLIMIT_DATA`` (private writable memory), not ``RLIMIT_AS``: torch
reserves far more address space than it uses, so ``RLIMIT_AS`` breaks it.
"""
from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import sys
from dataclasses import dataclass, field

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18

# Defined once here; batch.py, cli.py and check.py import them. This module must stay
# importable anywhere (Windows, macOS, no torch): POSIX-only modules (pwd, resource, libc)
# are imported inside the functions that run in the worker or as root.
WORKER_USER = "ag-student"          # the unprivileged user student code runs as (when root)
WORKER_USER_ENV = "AUTOGRADER_WORKER_USER"   # another default (the kit's tests, run in parallel)
DEFAULT_CALL_TIMEOUT = 20.0         # seconds one call into student code may take
METADATA_PATH = "/autograder/submission_metadata.json"   # Gradescope's (names, emails, ids)
METADATA_ENV = "AUTOGRADER_METADATA_PATH"                # another place for it (tests)
SHARE_ENV = "AUTOGRADER_SANDBOX_SHARE"     # folders (os.pathsep-separated) the worker shares (tests)


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
    user: str = field(default_factory=lambda: os.environ.get(WORKER_USER_ENV) or WORKER_USER)
    isolation: str = "auto"             # "auto" | "namespaces" | "user" | "process" (levels.py);
                                        # "auto" also reads AUTOGRADER_ISOLATION
    # the platform's submission metadata (names, emails): never readable by the worker
    metadata_path: str = field(default_factory=lambda: os.environ.get(METADATA_ENV) or METADATA_PATH)
    private_tmp_mb: int = 64            # size of the worker's own /tmp and /dev/shm (namespaces level)
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


# --------------------------------------------------------------------------- user

def ensure_user(name: str = WORKER_USER) -> tuple[int, int]:
    """The worker user's (uid, gid), creating a locked system account on demand."""
    import pwd
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


# --------------------------------------------------------------------------- namespaces

def make_mounts_private() -> None:
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)


def unshare(flags: int) -> None:
    if libc().unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare failed: {os.strerror(err)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    rc = libc().mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                     ctypes.c_ulong(flags), data.encode() if data else None)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def interpreter_paths() -> set[str]:
    """Where the worker may import from: the interpreter's prefixes and ``sys.path``.

    Only real absolute paths: ``sys.path`` also holds path-hook markers (an editable
    install's "__editable__…__path_hook__") and entries that do not exist."""
    return {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, *sys.path)
            if p and os.path.isabs(p) and os.path.exists(p)}


def private_scratch(size_mb: int, keep: set[str]) -> None:
    """Give the worker its own size-capped ``/tmp`` and ``/dev/shm`` (tmpfs, private mount
    namespace): what it writes there is capped, invisible to others and freed with it.

    Paths in ``keep`` that lay under them (an interpreter or a checkout in ``/tmp``) are
    bound back from the covered folder, reached through a descriptor opened before."""
    for folder in ("/tmp", "/dev/shm"):
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        inside = sorted(p for p in keep if p.startswith(folder + "/"))
        old = os.open(folder, os.O_PATH | os.O_DIRECTORY)
        try:
            mount_tmpfs(folder, f"size={size_mb}m,mode=1777")
            for path in inside:
                source = f"/proc/self/fd/{old}/{path[len(folder) + 1:]}"
                if os.path.isdir(source):
                    os.makedirs(path, 0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
                    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
                _mount(source, path, None, MS_BIND | MS_REC, None)
        finally:
            os.close(old)


def fresh_proc() -> bool:
    """Mount a /proc that shows only this pid namespace (run as its pid 1). False if the
    platform refuses (the worker then still sees the machine's process list)."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        return True
    except OSError:
        return False


def expose_interpreter(stash_root: str) -> None:
    """Let the worker user reach the interpreter's files where an ancestor folder blocks it.

    E.g. a Python under ``/root/.pyenv`` with ``/root`` at mode 0700: lazy imports of the
    standard library would fail for the worker user, a false failure for the student. In the
    private mount namespace, the blocking folder is covered with a traversable tmpfs into
    which only the needed child is bind-mounted back. The real file system is untouched.
    """
    needed = interpreter_paths()
    blocked: dict[str, set[str]] = {}
    for path in needed:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/" + "/".join(parts[:depth])
            if not os.stat(folder).st_mode & 0o001:
                blocked.setdefault(folder, set()).add(parts[depth])
    # Outermost first: a blocked folder inside another is reached through the bind mount
    # that the outer one's step puts back, and is then covered in turn.
    for n, (folder, children) in enumerate(sorted(blocked.items(), key=lambda kv: kv[0].count("/"))):
        stash = os.path.join(stash_root, f".expose{n}")
        os.mkdir(stash, 0o700)
        _mount(folder, stash, None, MS_BIND | MS_REC, None)
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=0711")
        for child in sorted(children):
            source, target = os.path.join(stash, child), os.path.join(folder, child)
            if os.path.isdir(source):
                os.mkdir(target)
            else:                                      # e.g. a zip on sys.path
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            _mount(source, target, None, MS_BIND | MS_REC, None)
        libc().umount2(stash.encode(), 2)               # MNT_DETACH
        os.rmdir(stash)


def bind(source: str, target: str, remount_flags: int | None = None) -> None:
    """Bind ``source`` onto ``target`` (with its submounts); or, given ``remount_flags``
    (e.g. MS_REMOUNT | MS_RDONLY), change the flags of that bind mount."""
    if remount_flags is None:
        _mount(source, target, None, MS_BIND | MS_REC, None)
    else:
        _mount("none", target, None, MS_BIND | remount_flags, None)


def unmount(target: str) -> None:
    """Detach whatever is mounted on ``target`` (errors ignored)."""
    libc().umount2(target.encode(), 2)                   # MNT_DETACH


def mount_tmpfs(target: str, options: str) -> None:
    """A fresh tmpfs on ``target`` (private mount namespace only)."""
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)


def hide_folders(paths: list[str]) -> None:
    """In a private mount namespace, cover each folder with an empty read-only tmpfs."""
    for path in paths:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0555")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND, None)


# --------------------------------------------------------------------------- privileges and limits

def drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.geteuid() == 0 or os.getuid() == 0:
        raise OSError("could not drop root privileges")


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


def pid_namespace(pid: int) -> str | None:
    """The pid namespace of ``pid`` (e.g. ``"pid:[4026532291]"``), or None if it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def kill_all_of_user(uid: int, gid: int) -> None:
    """SIGKILL every process of ``uid`` (user level: no namespace to kill instead).

    A helper forked for this drops to ``uid`` (privately: :mod:`autograder.sandbox.asuser`)
    and calls ``kill(-1, SIGKILL)``: the kernel
    then signals every process of that user in one pass, so a fork bomb cannot outrun a
    /proc scan. Parallel graders use different worker users; theirs are not touched."""
    if uid == 0:
        raise ValueError("refusing to kill every process of root")
    from autograder.sandbox.asuser import run_as_user

    def kill_everything() -> bytes:
        for _ in range(3):
            try:
                os.kill(-1, 9)
            except ProcessLookupError:
                break
        return b""

    run_as_user(uid, gid, kill_everything)


def remove_user_files(uid: int, folders: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")) -> list[str]:
    """Delete what ``uid`` left at the top of the shared scratch folders (user level);
    the paths removed. Symbolic links are removed, never followed."""
    import shutil
    removed = []
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                if info.st_uid != uid:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
                removed.append(path)
            except OSError:
                continue
    return removed


def kill_user_processes(uid: int, namespace: str | None) -> None:
    """SIGKILL every process owned by ``uid`` inside one worker's pid namespace (escapees
    from the worker's session). Only that namespace: other workers of the same user (a
    parallel ``batch``, another grader on the machine) are not ours to kill. No namespace
    known means the worker's namespace is already gone, and everything in it with it."""
    if namespace is None:
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid and pid_namespace(int(entry)) == namespace:
                os.kill(int(entry), 9)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
