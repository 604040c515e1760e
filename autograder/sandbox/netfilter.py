"""Network off for the worker without namespaces: a seccomp filter on ``socket()``.

At the *user* isolation level there is no private network namespace. Instead the worker,
before any student code, installs a seccomp-BPF filter (``prctl``, allowed by Docker's
default profile) that makes ``socket(AF_INET | AF_INET6, ...)`` fail with EACCES. Unix
sockets still work (nothing in the worker needs them, but refusing them buys nothing: the
worker user cannot reach the grader's). Also refused: ``io_uring_setup`` (io_uring can open
sockets without calling ``socket``), the x32 ABI and any foreign architecture's system
calls (a 32-bit ``socketcall`` would bypass the filter). Filters are inherited by every
thread and process started afterwards and cannot be removed.

Only x86-64 and aarch64 are known here; elsewhere :func:`block_network` returns False and
the log says the network is not blocked.
"""
from __future__ import annotations

import ctypes
import errno
import platform

# (AUDIT_ARCH_*, socket, io_uring_setup) per machine
_ARCHES = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
_AF_INET, _AF_INET6 = 2, 10
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000


def _errno(code: int) -> int:
    return 0x00050000 | code                         # SECCOMP_RET_ERRNO


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def program(machine: str | None = None) -> list[tuple[int, int, int, int]] | None:
    """The BPF program (code, jt, jf, k) for ``machine`` (default: this one); None if unknown."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, nr_socket, nr_io_uring_setup = arch
    return [
        (_LD_W_ABS, 0, 0, 4),                        # 0  A = seccomp_data.arch
        (_JEQ_K, 1, 0, audit_arch),                  # 1  native ABI? -> 3
        (_RET_K, 0, 0, _errno(errno.EPERM)),         # 2  foreign ABI: refuse everything
        (_LD_W_ABS, 0, 0, 0),                        # 3  A = seccomp_data.nr
        (_JGE_K, 0, 1, 0x40000000),                  # 4  x32 ABI? -> 5, else -> 6
        (_RET_K, 0, 0, _errno(errno.EPERM)),         # 5
        (_JEQ_K, 0, 1, nr_io_uring_setup),           # 6  io_uring_setup -> 7, else -> 8
        (_RET_K, 0, 0, _errno(errno.ENOSYS)),        # 7
        (_JEQ_K, 0, 3, nr_socket),                   # 8  socket -> 9, else -> 12
        (_LD_W_ABS, 0, 0, 16),                       # 9  A = low 32 bits of args[0] (domain)
        (_JEQ_K, 2, 0, _AF_INET),                    # 10 -> 13
        (_JEQ_K, 1, 0, _AF_INET6),                   # 11 -> 13
        (_RET_K, 0, 0, _ALLOW),                      # 12
        (_RET_K, 0, 0, _errno(errno.EACCES)),        # 13
    ]


def block_network() -> bool:
    """Install the filter in this process (and all it starts later); False if this platform
    has no known filter or refuses it. Sets no_new_privs (needed without CAP_SYS_ADMIN)."""
    insns = program()
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
