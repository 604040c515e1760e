"""The worker's system-call policy (seccomp): sockets, programs, kernel objects, file metadata.

Installed in every forked worker (levels *namespaces*, *user*, *landlock* and *process*), before
any student code (it needs no root: ``no_new_privs`` is set first). What it guarantees, per call:

* ``socket()`` and ``socketpair()``: only the families allowed open; every other family
  fails with EACCES. An allowlist: a family added to the kernel tomorrow is refused too.
  Without a network namespace of its own (levels *user* and *landlock*) only AF_UNIX is
  allowed (:data:`UNIX_ONLY`): no INET socket can reach a Dask scheduler, another grader or
  the Internet. Inside a private network namespace (level *namespaces*) INET and INET6
  sockets have nothing to reach and are allowed (:data:`INSIDE_NETWORK_NAMESPACE`: code
  that probes the network at import keeps working), while the families that cross a
  network namespace (AF_VSOCK to the host's hypervisor, AF_NETLINK to the kernel's
  interfaces, AF_PACKET, …) stay refused.
* ``io_uring_setup`` fails with ENOSYS (io_uring can open sockets without ``socket``).
* ``execve`` and ``execveat`` fail with EACCES: the worker starts no other program, so every
  process student code starts is a fork of the worker, with its limits, filters and guards
  (a fresh interpreter would have none of the worker's run-time guards).
* ``memfd_create`` and ``memfd_secret`` fail with EPERM: a memory file's pages are charged
  to no process until mapped, so ``RLIMIT_DATA`` does not cap them and the out-of-memory
  killer, looking for the process that holds the memory, would pick another one (another
  student's worker in a ``batch``). Shared anonymous mappings stay allowed: their pages count
  in the worker's resident size, and the killer picks the worker (``oom_score_adj`` 1000).
* ``add_key``, ``request_key`` and ``keyctl`` fail with EPERM: a kernel key outlives the
  worker and is found by any later worker (another student's) through ``/proc/keys``.
* ``unshare`` and ``setns`` fail with EPERM, ``clone`` with ``CLONE_NEWUSER`` too, and ``clone3``
  (whose flags the filter cannot read) with ENOSYS, so the C library starts threads and
  processes with ``clone``: a user namespace of its own would let the worker mount a tmpfs
  past every memory and disk cap, and reach kernel code meant for administrators.
* Changes to a file's metadata fail with EPERM: its mode (``chmod``, ``fchmod``, ``fchmodat``,
  ``fchmodat2``), owner (``chown`` and its kin), times (``utime``, ``utimes``, ``futimesat``,
  ``utimensat``) and extended attributes (``setxattr``, ``removexattr`` and their kin). Landlock
  governs reading and writing a file's contents, not these, and at the *landlock* and
  *process* levels the worker runs as the grader's own user, the owner of the TA's files: a
  ``chmod 0`` of the class folder, the output folder and the kit ended a TA's whole ``batch``
  with no gradebook (red team), and the mode of a file it may only read (the TA's own venv)
  would be its to change. By path or by descriptor, in its own folder too: the worker has no
  reason to change a mode, and a filter cannot tell one path from another. The same holds for
  an inode's flags (``ioctl`` ``FS_IOC_SETFLAGS``, ``FS_IOC_FSSETXATTR``, ``FS_IOC_SETVERSION``:
  the owner may set ``noatime`` or ``nodump`` on a file it may only read, the TA's venv).
* Watching files and holding them fail with EPERM: ``inotify`` and ``fanotify`` (a watch on a
  folder the worker may not list, the class folder, still hands it the names created there:
  red team), ``fcntl`` ``F_NOTIFY`` (the same, older) and ``F_SETLEASE`` (a write lease on a
  file it may read, the TA's venv's ``.pth``, held every Python the TA started for 45 s).
* System calls of a foreign ABI (a 32-bit ``socketcall`` or ``ipc``) and the x32 ABI fail
  with EPERM: the filter matches system call numbers, which only mean something in the
  native ABI.
* With ``refuse_ipc`` (the *user* level, which has no IPC namespace of its own):
  ``shmget``, ``semget``, ``msgget`` and ``mq_open`` fail with EPERM, so no System V or
  POSIX IPC object can outlive the worker or pin memory outside its limits.

Filters are inherited by every thread and process started afterwards and cannot be removed.
Only x86-64 and aarch64 are known here; elsewhere :func:`block_network` returns False and
the log says the network is not blocked.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import socket

UNIX_ONLY = (socket.AF_UNIX,)                                           # no network namespace
INSIDE_NETWORK_NAMESPACE = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)   # nothing to reach

# (AUDIT_ARCH_*, system call numbers) per machine
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {"socket": 41, "socketpair": 53, "connect": 42, "io_uring_setup": 425,
                            "execve": 59, "execveat": 322, "memfd_create": 319, "memfd_secret": 447,
                            "shmget": 29, "semget": 64, "msgget": 68, "mq_open": 240,
                            "add_key": 248, "request_key": 249, "keyctl": 250,
                            "unshare": 272, "setns": 308, "clone": 56, "clone3": 435,
                            "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
                            "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260,
                            "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280,
                            "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463,
                            "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
                            "removexattrat": 466,
                            "inotify_init": 253, "inotify_init1": 294, "inotify_add_watch": 254,
                            "fanotify_init": 300, "fanotify_mark": 301, "ioctl": 16, "fcntl": 72}),
    "aarch64": (0xC00000B7, {"socket": 198, "socketpair": 199, "connect": 203, "io_uring_setup": 425,
                             "execve": 221, "execveat": 281, "memfd_create": 279, "memfd_secret": 447,
                             "shmget": 194, "semget": 190, "msgget": 186, "mq_open": 180,
                             "add_key": 217, "request_key": 218, "keyctl": 219,
                             "unshare": 97, "setns": 268, "clone": 220, "clone3": 435,
                             "fchmod": 52, "fchmodat": 53, "fchmodat2": 452,
                             "fchown": 55, "fchownat": 54, "utimensat": 88,
                             "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463,
                             "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
                             "removexattrat": 466,
                             "inotify_init1": 26, "inotify_add_watch": 27,
                             "fanotify_init": 262, "fanotify_mark": 263, "ioctl": 29, "fcntl": 25}),
}
SOCKET_CALLS = ("socket", "socketpair")     # first argument: the address family
IPC_CALLS = ("shmget", "semget", "msgget", "mq_open")
EXEC_CALLS = ("execve", "execveat")
MEMFD_CALLS = ("memfd_create", "memfd_secret")     # memory no process's resident size shows
KEY_CALLS = ("add_key", "request_key", "keyctl")    # kernel keyrings outlive the worker, shared by uid
NAMESPACE_CALLS = ("unshare", "setns")              # a namespace of its own: mounts past every cap
# a file's mode, owner, times and extended attributes: Landlock does not govern them (the
# generic table of aarch64 has only the *at and f* forms; the others are skipped there)
METADATA_CALLS = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
                  "utime", "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr",
                  "setxattrat", "removexattr", "lremovexattr", "fremovexattr", "removexattrat")
WATCH_CALLS = ("inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark")
# commands refused by their number, the second argument (an unsigned int for both calls)
REFUSED_COMMANDS = {
    "ioctl": (0x40086602, 0x40046602,            # FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS: an inode's flags
              0x401C5820,                        # FS_IOC_FSSETXATTR: its flags and project
              0x40087602, 0x40047602),           # FS_IOC_SETVERSION, FS_IOC32_SETVERSION: its generation
    "fcntl": (1024, 1026),                       # F_SETLEASE, F_NOTIFY
}
CLONE_NEWUSER = 0x10000000

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_X32_BIT = 0x40000000
_OFF_NR, _OFF_ARCH, _OFF_ARG0, _OFF_ARG1 = 0, 4, 16, 24   # struct seccomp_data (an argument's low 32 bits)


def _errno(code: int) -> int:
    return 0x00050000 | code                         # SECCOMP_RET_ERRNO


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def _assemble(lines: list[tuple]) -> list[tuple[int, int, int, int]]:
    """Resolve labels: ``lines`` holds instructions ``(code, jt, jf, k)`` whose jump targets
    are label names (or 0: the next instruction), and bare strings that name a position."""
    where, count = {}, 0
    for line in lines:
        if isinstance(line, str):
            where[line] = count
        else:
            count += 1
    out: list[tuple[int, int, int, int]] = []
    for line in lines:
        if isinstance(line, str):
            continue
        code, jt, jf, k = line
        here = len(out) + 1                          # jumps count from the next instruction
        jt = where[jt] - here if isinstance(jt, str) else jt
        jf = where[jf] - here if isinstance(jf, str) else jf
        out.append((code, jt, jf, k))
    return out


def program(machine: str | None = None, refuse_ipc: bool = False,
            families: tuple[int, ...] = UNIX_ONLY,
            refuse_connect: bool = False) -> list[tuple[int, int, int, int]] | None:
    """The BPF program (code, jt, jf, k) for ``machine`` (default: this one) that opens only
    sockets of ``families`` (and, with ``refuse_connect``, connects none: a pathname UNIX
    socket of the grader's user stays out of reach); None if the machine is unknown."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, nr = arch
    refused = [("io_uring_setup", errno.ENOSYS), *((name, errno.EACCES) for name in EXEC_CALLS),
               *((name, errno.EPERM) for name in MEMFD_CALLS), *((name, errno.EPERM) for name in KEY_CALLS),
               *((name, errno.EPERM) for name in NAMESPACE_CALLS),
               *((name, errno.EPERM) for name in (*METADATA_CALLS, *WATCH_CALLS) if name in nr),
               ("clone3", errno.ENOSYS)]          # flags out of the filter's sight: the C library falls back to clone
    if refuse_ipc:
        refused += [(name, errno.EPERM) for name in IPC_CALLS]
    if refuse_connect:
        refused.append(("connect", errno.EACCES))
    lines: list[tuple | str] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, "native", 0, audit_arch),
        (_RET_K, 0, 0, _errno(errno.EPERM)),          # a foreign ABI: refuse everything
        "native",
        (_LD_W_ABS, 0, 0, _OFF_NR),
        (_JGE_K, 0, "numbered", _X32_BIT),
        (_RET_K, 0, 0, _errno(errno.EPERM)),          # the x32 ABI
        "numbered",
    ]
    for name, code in refused:
        lines += [(_JEQ_K, 0, f"after-{name}", nr[name]), (_RET_K, 0, 0, _errno(code)), f"after-{name}"]
    lines += [(_JEQ_K, 0, "after-clone", nr["clone"]), (_LD_W_ABS, 0, 0, _OFF_ARG0),   # clone's flags
              (_JSET_K, 0, "allow", CLONE_NEWUSER), (_RET_K, 0, 0, _errno(errno.EPERM)), "after-clone"]
    for name, commands in REFUSED_COMMANDS.items():           # the command, then allow or refuse
        lines += [(_JEQ_K, 0, f"after-{name}", nr[name]), (_LD_W_ABS, 0, 0, _OFF_ARG1)]
        lines += [(_JEQ_K, f"refuse-{name}", 0, command) for command in commands]
        lines += [(_RET_K, 0, 0, _ALLOW),
                  f"refuse-{name}", (_RET_K, 0, 0, _errno(errno.EPERM)), f"after-{name}"]
    lines += [(_JEQ_K, "family", 0, nr[name]) for name in SOCKET_CALLS]
    lines += [(_RET_K, 0, 0, _ALLOW), "family", (_LD_W_ABS, 0, 0, _OFF_ARG0)]
    lines += [(_JEQ_K, "allow", 0, int(family)) for family in families]
    lines += [(_RET_K, 0, 0, _errno(errno.EACCES)), "allow", (_RET_K, 0, 0, _ALLOW)]
    return _assemble(lines)


def block_network(refuse_ipc: bool = False, refuse_connect: bool = False) -> bool:
    """No socket but AF_UNIX (no network namespace of its own): install the filter in this
    process (and all it starts later); False if this platform has no known filter or refuses
    it. Sets no_new_privs (needed without CAP_SYS_ADMIN)."""
    return _install(program(refuse_ipc=refuse_ipc, refuse_connect=refuse_connect))


def block_crossing_families() -> bool:
    """Inside a private network namespace: refuse the socket families that cross it (INET and
    INET6 there reach nothing); False if this platform has no known filter or refuses it."""
    return _install(program(families=INSIDE_NETWORK_NAMESPACE))


def _install(insns: list[tuple[int, int, int, int]] | None) -> bool:
    if insns is None:
        return False
    from autograder.sandbox.limits import libc
    array = (_Insn * len(insns))(*(_Insn(*i) for i in insns))
    prog = _Prog(len(insns), ctypes.cast(array, ctypes.POINTER(_Insn)))
    c = libc()
    c.prctl.argtypes = None
    if c.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
               ctypes.c_ulong(0)) != 0:
        return False
    return c.prctl(_PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), ctypes.byref(prog),
                   ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
