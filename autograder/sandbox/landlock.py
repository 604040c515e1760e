"""Landlock: a grader without root (a TA's laptop, a shared department machine) still keeps
student code away from the user's files (the *landlock* level, ``isolation.LandlockLevel``;
the user level and the namespaces level's fallback use it too where the kernel has it).

Landlock (Linux 5.13 and later, no privilege needed) lets a process give up file-system
rights for itself and everything it starts, for good. Before any student code runs, the
worker restricts itself to:

* **reading** (and executing) only what Python and its libraries need: the interpreter's
  import roots and the other ``sys.path`` entries that hold no protected folder
  (:func:`autograder.sandbox.allowlist.import_paths`; a root that holds the kit, such as
  site-packages after ``pip install``, is allowed child by child, the kit left out), the
  system's libraries and configuration (``/usr``, ``/lib*``, ``/etc``, …), ``/proc``,
  ``/sys`` and a few devices: never the user's home, the kit, the hidden tests, the class
  folder, other submissions or the results;
* **writing** only its own temporary folder (its ``HOME`` and ``TMPDIR``) and ``/dev/null``;
* (ABI 4+) no TCP ``bind`` or ``connect``; (ABI 6+) no signal to a process outside its own
  domain (the grader, the zygote, the TA's shell) and no abstract UNIX socket outside it.

Landlock also stops the worker from tracing processes outside its domain (``ptrace``, and
``/proc/<pid>/mem``/``environ`` of the grader). The seccomp filter of the level
(:mod:`netfilter`) adds: no socket but AF_UNIX, no ``connect`` at all (a pathname socket such
as a Docker or SSH agent socket stays out of reach), no System V or POSIX IPC, no change
to any file's mode, owner, times, extended attributes or inode flags, and no inotify watch or
lease, none of which Landlock governs (the worker runs as the TA, the owner of the class, kit
and output folders: a ``chmod 0`` of them ended a batch with no gradebook, a watch on the class
folder named every classmate, a lease on the TA's venv held the TA's Python for 45 s).

What it cannot do: files the worker opened before it was restricted (none of the student's:
restriction comes before the student's file is loaded), and CPU or memory beyond the
process's rlimits.

The system calls are made through ``ctypes`` (x86-64 and aarch64 share their numbers).
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
from typing import TYPE_CHECKING, Iterable

# Worker-side: imported here, at module level (the zygote loads them before any worker's
# files are locked or hidden).
from autograder.sandbox import allowlist, harden, limits, netfilter  # noqa: F401 - harden: allowlist's

if TYPE_CHECKING:
    from autograder.sandbox.forkserver import WorkerSpec

# generic system call table: x86-64 and aarch64 alike
_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# access rights (linux/landlock.h), each with the ABI that introduced it
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE = 1 << 13, 1 << 14                 # ABI 2, ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1     # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1   # ABI 6

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1}
READ = EXECUTE | READ_FILE | READ_DIR

# read-only for the worker besides the import paths (what exists of them)
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys",
               "/opt/wheels")
DEVICES_READ = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/shm")
DEVICES_WRITE = ("/dev/null",)
# never readable by a worker that is still root when it confines itself (a root grader forcing
# the landlock level: uid 0 owns them); a worker user cannot read them anyway, and /etc stays
# listable for it
SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
           "/etc/ssh", "/etc/ssl/private")


class LandlockError(OSError):
    """The kernel refused a Landlock call."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscalls() -> tuple[int, int, int] | None:
    return _SYS.get(platform.machine())


OFF_ENV = "AUTOGRADER_LANDLOCK"     # "0": do not use Landlock (a kernel where it misbehaves)


@functools.lru_cache(maxsize=1)
def abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing, disabled, or turned off
    with ``AUTOGRADER_LANDLOCK=0``."""
    numbers = _syscalls()
    if numbers is None or not sys.platform.startswith("linux") or os.environ.get(OFF_ENV) == "0":
        return 0
    c = limits.libc()
    version = c.syscall(ctypes.c_long(numbers[0]), None, ctypes.c_size_t(0),
                        ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _fs_rights(version: int) -> int:
    return _FS_BY_ABI.get(min(version, 3), _FS_BY_ABI[3])


def restrict(read: Iterable[str], write: Iterable[str], version: int | None = None) -> None:
    """Restrict this process (and all it starts later) to reading ``read`` and writing
    ``write`` (folders or files; missing ones are skipped), with no TCP and, where the kernel
    has it, no signal or abstract socket outside this domain. Irreversible."""
    version = abi() if version is None else version
    if version < 1:
        raise LandlockError("Landlock is not available in this kernel")
    create, add_rule, restrict_self = _syscalls()     # type: ignore[misc]
    c = limits.libc()
    fs = _fs_rights(version)
    attr = _RulesetAttr(handled_access_fs=fs,
                        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if version >= 4 else 0,
                        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if version >= 6 else 0)
    size = 24 if version >= 6 else (16 if version >= 4 else 8)
    ruleset = c.syscall(ctypes.c_long(create), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path, rights in _rules(read, write, fs):
            _add_path_rule(c, add_rule, ruleset, path, rights)
        c.prctl.argtypes = None
        if c.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                   ctypes.c_ulong(0)) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if c.syscall(ctypes.c_long(restrict_self), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


def _rules(read: Iterable[str], write: Iterable[str], fs: int) -> list[tuple[str, int]]:
    """(path, rights) per rule: read-only paths, then writable ones (every right but making
    device nodes: a process that may, root's, would reach a disk through one)."""
    rules = [(p, READ) for p in dict.fromkeys(read)]
    rules += [(p, fs & ~(MAKE_CHAR | MAKE_BLOCK)) for p in dict.fromkeys(write)]
    return [(p, r) for p, r in rules if os.path.lexists(p)]


_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE      # what a rule on a file may hold


def _add_path_rule(c: ctypes.CDLL, add_rule: int, ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _PathBeneath(allowed_access=rights, parent_fd=fd)
        if c.syscall(ctypes.c_long(add_rule), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                     ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- what the worker may read


def _inside(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def readable_paths(protected: list[str], extra: Iterable[str] = ()) -> list[str]:
    """What a confined worker may read: the import paths and the system's folders, each split
    into its children where it holds a protected path (never the protected path itself).

    What imports need is never hidden, as at the namespaces level: an import root (the
    standard library, site-packages) inside a protected folder stays readable (a results file
    written into a checkout whose ``.venv`` holds the Python hides the checkout; pyplot, which
    a student file imports first, could not be read), still without what it holds that is
    protected."""
    roots = harden.import_roots()
    secrets = SECRETS if os.geteuid() == 0 else ()
    real_protected = [os.path.realpath(p) for p in (*protected, *secrets)]
    wanted = [*allowlist.import_paths(protected), *SYSTEM_READ, *DEVICES_READ, *_library_config(), *extra]
    out: list[str] = []
    for path in dict.fromkeys(p for p in wanted if os.path.lexists(p)):
        real = os.path.realpath(path)
        out += _without(real, [p for p in real_protected if real not in roots or p == real or not _inside(p, real)])
    return sorted(set(out))


def _library_config() -> list[str]:
    """matplotlib's config and cache folders (its font list), when it is loaded."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return []
    return [mpl.get_configdir(), mpl.get_cachedir()]


def _without(path: str, protected: list[str], depth: int = 0) -> list[str]:
    """``path`` itself when it holds no protected path; else its children, minus the
    protected ones (iteratively deeper where a child holds one)."""
    if any(_inside(p, path) for p in protected):
        return []                          # the protected path itself, or inside one
    if not any(_inside(path, p) for p in protected) or not os.path.isdir(path) or depth > 32:
        return [path]
    out: list[str] = []
    try:
        names = sorted(os.listdir(path))[:10_000]
    except OSError:
        return []
    for name in names:
        out += _without(os.path.join(path, name), protected, depth + 1)
    return out


def confine_worker(cfg: limits.SandboxConfig, spec: "WorkerSpec") -> None:
    """The worker's ruleset: read what Python needs (never ``cfg.protected_paths()``), write its
    own home (and the folders ``cfg.share`` names); ``LandlockError`` if the kernel refuses."""
    restrict(read=readable_paths(cfg.protected_paths(), cfg.share),
             write=[spec.home, *cfg.share, *DEVICES_WRITE])


_CAPSET = {"x86_64": 126, "aarch64": 91}
_PR_CAPBSET_DROP = 24
_CAPABILITY_VERSION_3 = 0x20080522


def drop_capabilities() -> None:
    """Give up every capability of this process and all it starts, for good (root's: the
    landlock level forced on a root grader keeps uid 0, but without ``CAP_DAC_OVERRIDE``,
    ``CAP_MKNOD``, ``CAP_SYS_ADMIN``, ``CAP_KILL``…). ``LandlockError`` if the kernel refuses."""
    c = limits.libc()
    number = _CAPSET.get(platform.machine())
    if number is None:
        raise LandlockError(f"no capset system call known for {platform.machine()}")
    c.prctl.argtypes = None
    for cap in range(64):                        # the bounding set: no capability comes back on exec
        c.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()               # effective, permitted, inheritable: none (twice 32 bits)
    if c.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)) != 0:
        raise LandlockError(ctypes.get_errno(), "capset failed")


def confine_if_available(cfg: limits.SandboxConfig, spec: "WorkerSpec") -> bool:
    """:func:`confine_worker` where the kernel (and, in a container, its seccomp profile) has
    Landlock; whether the worker is now confined."""
    if abi() < 1:
        return False
    try:
        confine_worker(cfg, spec)
    except (LandlockError, OSError):
        return False
    return True


abi()          # probed now, where this module is imported (the grader, the zygote): the
               # worker's own environment is scrubbed before it confines itself
