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


class LocalDask:
    """One scheduler and ``workers`` workers (``--nthreads`` each), no dashboards, 127.0.0.1 only."""

    def __init__(self, workers: int = 2, nthreads: int = 1, env: dict[str, str] | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="ag-dask-"))
        self.env = dict(os.environ, **(env or {}))
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), self.env.get("PYTHONPATH")) if p)
        self.processes: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        try:
            scheduler_file = self.folder / "scheduler.json"
            self._start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                         "--scheduler-file", str(scheduler_file), "--idle-timeout", IDLE_TIMEOUT], "scheduler")
            self.address = self._wait_address(scheduler_file)
            for i in range(workers):
                self.workers.append(self._start(
                    [DASK, "worker", self.address, "--host", "127.0.0.1", "--nthreads", str(nthreads),
                     "--no-nanny", "--no-dashboard", "--death-timeout", DEATH_TIMEOUT, "--name", f"w{i}",
                     "--local-directory", str(self.folder / f"w{i}")], f"worker{i}"))
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

    def _wait_workers(self, count: int) -> None:
        from distributed import Client
        with Client(self.address, timeout=60, set_as_default=False) as client:
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
