"""The namespaces level's own kernel facilities: private mount, network, pid and IPC
namespaces and a root of the worker's own (:mod:`allowlist`), entered by the worker at
start-up (:meth:`autograder.sandbox.isolation.NamespacesLevel.enter`), and the probe that
says whether the platform allows them."""
from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from autograder.sandbox import allowlist, frames, ipc, limits, mounts, writable

if TYPE_CHECKING:
    from autograder.sandbox.forkserver import WorkerSpec


def probe() -> str | None:
    """None if a child can make private mount/network/pid/IPC namespaces and mount a tmpfs in
    them; otherwise why not (e.g. "unshare: Operation not permitted")."""
    limits.libc()                               # loaded before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                # the probe: report and leave, nothing else
        os.close(read_end)
        message = b"OK"
        try:
            mounts.unshare(mounts.CLONE_NEWNS | mounts.CLONE_NEWNET | mounts.CLONE_NEWPID | ipc.CLONE_NEWIPC)
            mounts.make_mounts_private()
            mounts.mount_tmpfs("/tmp", "size=4k,mode=0700")
        except BaseException as exc:            # noqa: BLE001 - the reason is the answer
            message = str(exc).encode()[:500] or type(exc).__name__.encode()
        os.write(write_end, message)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reason = pipe.read().decode(errors="replace")
    os.waitpid(pid, 0)
    if reason == "OK":
        return None
    return reason or "the probe process died"


def _scratch_places(ids) -> tuple[str, ...]:
    """Without a root of its own, every place the worker user can write becomes private:
    /tmp, /dev/shm and each other one found (writable.places), outermost first."""
    found = ["/tmp", "/dev/shm", *writable.places(ids.uid, ids.gid)]
    chosen: list[str] = []
    for place in sorted(dict.fromkeys(found), key=lambda p: (p.count("/"), p)):
        if not any(place == c or place.startswith(c.rstrip("/") + "/") for c in chosen):
            chosen.append(place)
    return tuple(chosen)


def enter(sock: socket.socket, cfg: limits.SandboxConfig, spec: "WorkerSpec") -> tuple[str, bool]:
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
    home, protected, ids = spec.home, cfg.protected_paths(), spec.ids
    assert ids is not None, "the namespaces level runs as the worker user"
    try:
        allowlist.build(home, protected, home, ids.uid, ids.gid, cfg.user, cfg.private_tmp_mb, cfg.share)
        how = allowlist.enter(home)
    except OSError:
        mounts.unmount(home)
        how = "hidden"
        mounts.private_scratch(cfg.private_tmp_mb, mounts.interpreter_paths(), _scratch_places(ids))
        if not os.path.isdir(home):                      # it was in the covered /tmp
            os.makedirs(home, 0o700)
            os.chown(home, ids.uid, ids.gid)
        mounts.expose_interpreter(home)
        allowlist.hide_except_imports(protected)
        ipc.private_mqueue()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child:                                            # A: report B's pid, then wait for B
        os.close(read_end)
        frames.send(sock, {"pid": child})
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
