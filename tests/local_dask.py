"""A real Dask cluster on 127.0.0.1 for tests and the bench: ``dask scheduler`` and ``dask worker``
processes started with subprocess, bounded in time, always torn down (:meth:`LocalDask.close`).

Each process runs in its own session (so a kill reaches the grading processes it started
too); the scheduler ends by itself after ``IDLE_TIMEOUT`` without clients and the workers
after ``DEATH_TIMEOUT`` without a scheduler, should a test runner die before its finalizer.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).with_name("dask"))
IDLE_TIMEOUT = "900s"
DEATH_TIMEOUT = "60s"
START_TIMEOUT = 180.0


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and one certificate for 127.0.0.1 signed by it (openssl): (ca, cert,
    key), each mode 0600. The scheduler, the workers and the TA's client all use the cert."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key, cert, key, csr = (folder / n for n in ("ca.pem", "ca.key", "node.pem", "node.key", "node.csr"))
    san = folder / "san.cnf"
    san.write_text("subjectAltName=IP:127.0.0.1\n")
    for cmd in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
                 "-subj", "/CN=attention-autograder test CA"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
                ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                 "-days", "2", "-extfile", san]):
        subprocess.run(["openssl", *map(str, cmd)], check=True, capture_output=True, timeout=60)
    for path in (ca, cert, key, ca_key):
        path.chmod(0o600)
    return ca, cert, key


class LocalDask:
    """One scheduler and ``workers`` workers (``--nthreads`` each), no dashboards, 127.0.0.1
    only; with ``tls=True`` every connection is TLS with a throw-away CA (:attr:`tls_files`)."""

    def __init__(self, workers: int = 2, nthreads: int = 1, env: dict[str, str] | None = None,
                 tls: bool = False):
        self.folder = Path(tempfile.mkdtemp(prefix="ag-dask-"))
        self.env = dict(os.environ, **(env or {}))
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), self.env.get("PYTHONPATH")) if p)
        self.processes: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.tls_files = make_tls(self.folder / "tls") if tls else None
        secure = []
        if self.tls_files:
            ca, cert, key = self.tls_files
            secure = ["--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]
        try:
            scheduler_file = self.folder / "scheduler.json"
            self._start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                         "--scheduler-file", str(scheduler_file), "--idle-timeout", IDLE_TIMEOUT, *secure,
                         *(["--protocol", "tls"] if tls else [])], "scheduler")
            self.address = self._wait_address(scheduler_file)
            for i in range(workers):
                self.workers.append(self._start(
                    [DASK, "worker", self.address, "--host", "127.0.0.1", "--nthreads", str(nthreads),
                     "--no-nanny", "--no-dashboard", "--death-timeout", DEATH_TIMEOUT, "--name", f"w{i}",
                     "--local-directory", str(self.folder / f"w{i}"), *secure], f"worker{i}"))
            self._wait_workers(workers)
        except BaseException:
            self.close()
            raise

    def _start(self, command: list[str], name: str) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "wb")
        proc = subprocess.Popen(command, cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.processes.append(proc)
        return proc

    def _wait_address(self, scheduler_file: Path) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                return json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                if self.processes[0].poll() is not None:
                    break
                time.sleep(0.2)
        raise RuntimeError(f"the scheduler did not start: {self.log('scheduler')[-2000:]}")

    def security(self):
        """The client side's credentials (None without TLS)."""
        if self.tls_files is None:
            return None
        from autograder.batching.cluster import Tls
        return Tls(*(str(p) for p in self.tls_files)).security()

    def _wait_workers(self, count: int) -> None:
        from distributed import Client
        with Client(self.address, timeout=60, set_as_default=False, security=self.security()) as client:
            client.wait_for_workers(count, timeout=START_TIMEOUT)

    def log(self, name: str) -> str:
        try:
            return (self.folder / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""

    def kill_worker(self, index: int) -> None:
        """SIGKILL one worker's whole session (the worker and the graders it started)."""
        proc = self.workers[index]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def close(self) -> None:
        """Stop every process started here (SIGTERM, then SIGKILL), by process group id."""
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            for proc in reversed(self.processes):
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(p.poll() is None for p in self.processes):
                time.sleep(0.1)
        import shutil
        shutil.rmtree(self.folder, ignore_errors=True)
