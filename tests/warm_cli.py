"""``python -m autograder …`` for the kit's own tests, without paying ``import torch`` each time.

Every ``python -m autograder grade`` the tests start spends about 2 s of CPU importing torch
and NumPy before it reads its command line, and the tests start a few hundred of them (the
hostile corpus, the CLI's own tests): on two cores that was the largest single item of a run.
:func:`run` is :func:`subprocess.run` for those commands: a server process per test process
(started on first use) has imported torch and NumPy once; for each command it forks, and the
child becomes ``python -m autograder ARGS`` in the caller's working folder and environment,
with the caller's files as its standard streams (passed over a Unix socket), and runs
``autograder/__main__.py`` exactly as ``python -m`` would (its ``sys.path`` cleaning, its
``exit_process``). The grader, its zygote and workers are then what a fresh process would
start; only the interpreter's start and those two imports were paid once.

A server per interpreter: this test process's, and the venv outside /root that the user
level's tests grade with (``outside_python``). What a forked command cannot show, and stays on
real processes elsewhere: the start of a fresh interpreter (``sys.flags``, what is imported and
when: ``test_lazy_parts``, ``test_lifetime``), a grader started under another user
(``setpriv``: the process level's tests), an installed wheel (``test_wheel_install``) and
signals sent to the grader (``test_budget``, ``test_lifetime``). A command that is not
``PYTHON -m autograder``, a PYTHON whose server cannot start (no torch), or ``AGTEST_COLD_CLI=1``
in the environment: a real process (the last is the A/B switch).

The child's parent is a small handler process that waits for it and reports its exit status
(a negative number for a signal, as :mod:`subprocess` reports it); the caller's timeout kills
the child with SIGKILL, as :func:`subprocess.run` does.
"""
from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLD_ENV = "AGTEST_COLD_CLI"        # "1": every command is a real process (A/B, or to rule this out)
_MAX_REQUEST = 1 << 20
# The server starts with this much padding in its environment, so that the environment block
# on its stack (which every command forked from it inherits) can hold a command's environment:
# see _take_environment.
ENV_ROOM = 3 * 100_000
_ROOM_PADDING = {f"AGTEST_WARM_ROOM_{i}": "x" * (100_000 - 40) for i in range(3)}


# --------------------------------------------------------------------------- the caller's side

def run(args: list[str], *, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
        timeout: float | None = None, text: bool = False) -> subprocess.CompletedProcess:
    """``subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=timeout, text=text)``
    for ``args`` = ``[PYTHON, "-m", "autograder", …]``, forked from PYTHON's warm server; any
    other command (a prefix such as ``setpriv``, another module, ``-c``), or a PYTHON whose
    server cannot start, runs as a real process, unchanged."""
    server = _server(os.fspath(args[0])) if _forkable(args) else None
    if server is None:
        return subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=timeout, text=text,
                              stdin=subprocess.DEVNULL)
    request = {"args": list(map(str, args[3:])), "cwd": os.fspath(cwd) if cwd is not None else os.getcwd()}
    block = b"".join(os.fsencode(k) + b"=" + os.fsencode(v) + b"\0"
                     for k, v in (os.environ if env is None else env).items())
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            open(os.devnull, "rb") as devnull:
        returncode = server.call(request, block, (devnull.fileno(), out.fileno(), err.fileno()), args, timeout)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if text:
        stdout, stderr = stdout.decode(errors="replace"), stderr.decode(errors="replace")
    return subprocess.CompletedProcess(args, returncode, stdout, stderr)


def _forkable(args: list[str]) -> bool:
    """``PYTHON -m autograder …`` where PYTHON is this test process's interpreter or one the
    tests made (``outside_python``: a venv outside /root, for the user level)."""
    return (os.environ.get(COLD_ENV) != "1" and hasattr(os, "fork") and hasattr(socket, "AF_UNIX")
            and len(args) >= 3 and list(args[1:3]) == ["-m", "autograder"]
            and os.path.isabs(os.fspath(args[0])) and os.path.basename(os.fspath(args[0])).startswith("python")
            and os.access(os.fspath(args[0]), os.X_OK))


class _Server:
    """A warm server of this test process for the interpreter ``python``: started on first
    use, stopped at exit."""

    def __init__(self, python: str) -> None:
        self.folder = tempfile.mkdtemp(prefix="agtest-warm-cli-")
        self.address = os.path.join(self.folder, "socket")
        env = dict(os.environ, PYTHONPATH=str(ROOT), **_ROOM_PADDING)
        for key in [k for k in env if k.startswith(("PYTEST_", "COV_"))]:
            del env[key]
        self.process = subprocess.Popen([python, __file__, self.address], env=env, cwd="/",
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        atexit.register(self.stop)
        self.ready = self.process.stdout.readline() == b"ready\n"    # imports done, listening
        self.process.stdout.close()
        if not self.ready:                 # that Python cannot import torch, or no socket: cold
            self.stop()

    def _connect(self) -> socket.socket:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        conn.connect(self.address)
        return conn

    def call(self, request: dict, block: bytes, fds: tuple[int, int, int], args: list[str],
             timeout: float | None) -> int:
        if len(block) > ENV_ROOM:
            raise ValueError(f"an environment of {len(block)} bytes: the warm CLI holds {ENV_ROOM}")
        with self._connect() as conn:
            socket.send_fds(conn, [json.dumps(request).encode()], list(fds))
            conn.sendall(block)                       # read by the command itself (_take_environment)
            conn.settimeout(timeout)
            pid = None
            try:
                pid = int(conn.recv(64))
                reply = conn.recv(64)
            except socket.timeout:
                if pid is not None:
                    _kill(pid)
                raise subprocess.TimeoutExpired(args, timeout) from None
            if not reply:
                raise RuntimeError("the warm CLI's handler ended without a status")
            return int(reply)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        try:
            os.unlink(self.address)
            os.rmdir(self.folder)
        except OSError:
            pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_SERVERS: dict[str, _Server] = {}                  # interpreter -> its server


def _server(python: str) -> _Server | None:
    """``python``'s server, started now if it is not running; None where it cannot start."""
    server = _SERVERS.get(python)
    if server is None or (server.ready and server.process.poll() is not None):
        server = _SERVERS[python] = _Server(python)
    return server if server.ready else None


# --------------------------------------------------------------------------- the server's side

def serve(address: str) -> None:
    """Import what every command imports, then fork a handler per connection."""
    import numpy  # noqa: F401
    import torch  # noqa: F401   (no torch op runs here: no thread pool is started before a fork)

    parent = os.getppid()
    own = {os.path.realpath(os.path.dirname(__file__)), *map(os.path.realpath, _pythonpath(os.environ))}
    base_path = [p for p in sys.path if p and os.path.realpath(p) not in own]   # stdlib, site-packages
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)
    listener.settimeout(1.0)
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    while os.getppid() == parent:                     # the test process is gone: so is this server
        _reap()
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        if os.fork() == 0:
            listener.close()
            _handle(conn, base_path)
        conn.close()


def _pythonpath(env) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _handle(conn: socket.socket, base_path: list[str]) -> None:
    """The handler: fork the command, say its pid, wait, say its exit status (never returns)."""
    try:
        message, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 3)
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            _become_command(request, conn, fds, base_path)
        for fd in fds:
            os.close(fd)
        conn.sendall(str(pid).encode())
        _, status = os.waitpid(pid, 0)
        conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())
    finally:
        os._exit(0)


def _become_command(request: dict, conn: socket.socket, fds: list[int], base_path: list[str]) -> None:
    """This process becomes ``python -m autograder ARGS`` (never returns)."""
    code = 1
    try:
        _take_environment(conn)
        conn.close()
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
        tempfile.tempdir = None                        # TMPDIR is read again
        extra = _pythonpath(os.environ)
        sys.path[:] = [request["cwd"], *extra, *(p for p in base_path if p not in extra)]   # as `python -m` has it
        sys.argv = [str(ROOT / "autograder" / "__main__.py"), *request["args"]]
        import runpy
        runpy.run_module("autograder", run_name="__main__", alter_sys=True)
        code = 0                                       # __main__ ends in exit_process: rarely here
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _take_environment(conn: socket.socket) -> None:
    """Receive the caller's environment and hold it where a process started with it would: as
    ``NAME=value`` strings in the environment block at the top of the stack (libc's ``environ``
    points into it) and as the bytes objects of ``os.environ``, nowhere else. The kit's workers
    scrub exactly those two places before student code runs (``limits.scrub_environment``),
    and the hostile corpus scans a worker's memory for the grader's environment: a copy left
    anywhere else (a decoded message, libc's ``setenv`` copies, freed buffers) would be found
    there although a real grader never holds it. So the block is received straight into a
    buffer, copied into this process's own environment block (the server's, padded to
    ``ENV_ROOM``) and the buffer zeroed; ``os.environ``'s table is filled from memory views."""
    import ctypes

    buffer = bytearray(ENV_ROOM + 1)
    size = conn.recv_into(buffer)
    with open("/proc/self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    start, end = int(fields[47]), int(fields[48])             # env_start, env_end
    if size > end - start:
        raise RuntimeError(f"an environment of {size} bytes; the server's block holds {end - start}")
    os.environ.clear()                                         # the server's (no secrets)
    ctypes.memset(start, 0, end - start)
    ctypes.memmove(start, (ctypes.c_char * size).from_buffer(buffer), size)
    ctypes.memset((ctypes.c_char * len(buffer)).from_buffer(buffer), 0, len(buffer))
    del buffer
    view = (ctypes.c_char * size).from_address(start)
    block = memoryview(view).cast("B")
    pointers, at = [], 0
    while at < size:
        stop = _find_byte(block, at, size, 0)
        pointers.append(start + at)
        equals = _find_byte(block, at, stop, ord("="))
        if equals > at:
            os.environ._data[bytes(block[at:equals])] = bytes(block[equals + 1:stop])
        at = stop + 1
    table = (ctypes.c_void_p * (len(pointers) + 1))(*pointers, None)
    _KEPT.append(table)                                        # libc's environ, alive until exit
    ctypes.c_void_p.in_dll(ctypes.CDLL(None), "environ").value = ctypes.addressof(table)


_KEPT: list = []


def _find_byte(block: memoryview, at: int, stop: int, value: int) -> int:
    """The first index in [at, stop) holding ``value``, else ``stop`` (no copy of the block)."""
    while at < stop and block[at] != value:
        at += 1
    return at


if __name__ == "__main__":
    serve(sys.argv[1])
