"""The namespaces level's own kernel facilities: private mount, network, pid and IPC
namespaces and a root of the worker's own (:mod:`allowlist`), entered by the worker at
start-up (:meth:`autograder.sandbox.isolation.NamespacesLevel.enter`)."""
from __future__ import annotations

import os
import socket

from autograder.sandbox import allowlist, ipc, limits, mounts, wire


def enter(sock: socket.socket, cfg: limits.SandboxConfig, config: dict) -> tuple[str, bool]:
    """Private mount, network, pid and IPC namespaces (as root; the IPC namespace capped by
    ipc.py), and a root of the worker's own (allowlist.py): only what Python and its
    libraries need, private /tmp and /dev/shm.
    Where that root cannot be built, the kit and ``cfg.protected_paths()`` are hidden by
    mounts instead. Returns in B, pid 1 of the new pid namespace with a /proc of its own
    ("pivot_root", "chroot" or "hidden": how the root was made; and whether the IPC
    namespace could be capped); A stays behind, reports B's pid and exits with B's status."""
    mounts.unshare(mounts.CLONE_NEWNS | mounts.CLONE_NEWNET | mounts.CLONE_NEWPID | ipc.CLONE_NEWIPC)
    mounts.make_mounts_private()
    ipc_bounded = ipc.bound_namespace(cfg.private_tmp_mb)      # /proc/sys may be read-only here
    home, protected = config["home"], cfg.protected_paths()
    try:
        allowlist.build(home, protected, home, config["uid"], config["gid"], cfg.user, cfg.private_tmp_mb,
                        cfg.share)
        how = allowlist.enter(home)
    except OSError:
        mounts.unmount(home)
        how = "hidden"
        mounts.private_scratch(cfg.private_tmp_mb, mounts.interpreter_paths())
        if not os.path.isdir(home):                      # it was in the covered /tmp
            os.makedirs(home, 0o700)
            os.chown(home, config["uid"], config["gid"])
        mounts.expose_interpreter(home)
        allowlist.hide_except_imports(protected)
        ipc.private_mqueue()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child:                                            # A: report B's pid, then wait for B
        os.close(read_end)
        wire.send(sock, {"pid": child})
        sock.close()
        os.close(write_end)
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status)
                 else 128 + os.WTERMSIG(status))
    os.close(write_end)
    os.read(read_end, 1)                                 # until A has reported our pid
    os.close(read_end)
    if mounts.fresh_proc() and not ipc_bounded:
        ipc_bounded = ipc.bound_namespace(cfg.private_tmp_mb)  # through our own /proc, then
    return how, ipc_bounded
