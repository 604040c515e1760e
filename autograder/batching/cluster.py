"""``batch --scheduler ADDRESS``: each submission graded as a task on a Dask cluster.

TA's side (:class:`ClusterPool`, what :meth:`autograder.batching.runner.Runner.execute` calls instead of
the local warm pool): the staged private copy of a submission is packed into a deterministic,
bounded ``.tar.gz`` (:func:`pack`: sorted entries, fixed times, owners and modes; links kept
as links, never followed) and sent with the task, so no shared file system is assumed. The
task carries the TA's build id and the grading settings; its ``results.json`` and log come
back, and the TA's machine writes the gradebook, ``results/``, the summary and the histogram,
and resumes (:mod:`autograder.batching.resume`), exactly as for a local batch.

Worker's side (:func:`grade_task`, run by a ``dask worker`` that has the kit installed at the
same build id; another build refuses the task, :class:`BuildMismatch`): the bytes are unpacked
(:func:`unpack`: bounded, no path outside the folder) into a private root-owned folder, and
the submission is graded by the **same** ``Runner.execute`` as a local job (warm graders unless
``--cold``, memory groups, private staging, the hidden-folder list). Each concurrent task
slot on a machine holds its own worker user (``ag-student``, ``ag-student2``, …) through a lock
file (:func:`_lease`), so several Dask worker processes on one machine never share one.

Faults: a task is idempotent (a fresh private folder per run, nothing written on the TA's side
until its result arrives), so a worker that dies has its tasks graded elsewhere (Dask moves
them; ``retries`` covers exceptions); the TA keeps one row per submission. A task the cluster
cannot grade (its workers died too often, a build mismatch, a lost connection) becomes a zero
row with the reason, like a grader that dies locally.

Dask is imported lazily: without the ``[cluster]`` extra, ``batch`` works and ``--scheduler``
says how to install it (:class:`ClusterError`).
"""
from __future__ import annotations

import atexit
import fcntl
import gzip
import io
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from autograder.jsontypes import JSONObject
from autograder import contract, filetree
from autograder import jobs as private_jobs
from autograder.batching import resume
from autograder.batching.discovery import Entry  # noqa: F401 - the type of a batch entry (cluster tests)

RETRIES = 2                       # re-runs of a task that raised (a worker that died: Dask moves it)
PACK_MAX_BYTES = private_jobs.STAGE_MAX_BYTES + 16 * 1024 * 1024     # a packed submission
RESULTS_MAX_BYTES = 8 * 1024 * 1024                                   # a results.json coming back
LOG_MAX_BYTES = 128 * 1024                                            # the log's tail coming back
CONNECT_TIMEOUT = 30.0
WORKERS_TIMEOUT = 120.0           # waiting for the first worker to join
MAX_SLOTS = 64
INSTALL_HINT = ('pip install "attention-autograder[cluster]" in a checkout, or '
                'pip install "dist/attention_autograder-<version>-py3-none-any.whl[cluster]"')


class ClusterError(RuntimeError):
    """The cluster cannot be used (Dask missing, no scheduler, no worker, wrong builds)."""


class BuildMismatch(RuntimeError):
    """A worker runs another build of the kit than the TA's batch: it refuses the task."""


# --------------------------------------------------------------------------- packing

def pack(folder: Path) -> bytes:
    """A staged submission folder as a deterministic ``.tar.gz`` (bounded by
    :data:`PACK_MAX_BYTES`; raises :class:`autograder.jobs.StagingError` past it)."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT,
                         encoding="utf-8", errors="surrogateescape") as tar:
        for entry in filetree.walk(folder, private_jobs.stage_bounds()):
            _pack_entry(tar, entry)
    blob = raw.getvalue()
    if len(blob) > PACK_MAX_BYTES:
        raise private_jobs.StagingError(f"the packed submission is larger than {PACK_MAX_BYTES >> 20} MB")
    return blob


def _pack_entry(tar: tarfile.TarFile, entry: filetree.Entry) -> None:
    member = tarfile.TarInfo(entry.rel)
    member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
    if entry.kind is filetree.Kind.FOLDER:
        member.type, member.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(member)
    elif entry.kind is filetree.Kind.LINK:
        member.type, member.mode = tarfile.SYMTYPE, 0o777
        member.linkname = os.readlink(entry.name, dir_fd=entry.dir_fd)
        tar.addfile(member)
    elif entry.kind is filetree.Kind.FILE:
        member.mode, member.size = 0o644, entry.info.st_size
        with os.fdopen(entry.open(), "rb") as handle:
            tar.addfile(member, handle)
    # anything else was already skipped by the staging copy (autograder.jobs.stage_copy)


def unpack(blob: bytes, dest: Path) -> None:
    """Recreate a :func:`pack`'d folder in ``dest`` (created 0700): bounded like a staging copy,
    no absolute or ``..`` paths, links created as links and never followed."""
    if len(blob) > PACK_MAX_BYTES:
        raise private_jobs.StagingError("the packed submission is too large")
    dest.mkdir(parents=True)
    os.chmod(dest, 0o700)
    size_left, entries_left = private_jobs.STAGE_MAX_BYTES, private_jobs.STAGE_MAX_ENTRIES
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz", encoding="utf-8", errors="surrogateescape") as tar:
        for member in tar:
            entries_left -= 1
            parts = PurePosixPath(member.name).parts
            if entries_left < 0 or not parts or member.name.startswith("/") \
                    or any(p in ("", ".", "..") for p in parts) or len(parts) > private_jobs.STAGE_MAX_DEPTH + 2:
                raise private_jobs.StagingError(f"the packed submission has an unsafe entry {member.name!r}")
            parent = dest.joinpath(*parts[:-1])
            if not stat.S_ISDIR(os.lstat(parent).st_mode):              # never through a link
                raise private_jobs.StagingError(f"the packed submission has an unsafe entry {member.name!r}")
            target = parent / parts[-1]
            if member.isdir():
                target.mkdir()
            elif member.issym():
                os.symlink(member.linkname, target)
            elif member.isfile():
                size_left -= member.size
                if size_left < 0:
                    raise private_jobs.StagingError("the packed submission is too large")
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
                with os.fdopen(fd, "wb") as out, tar.extractfile(member) as data:
                    shutil.copyfileobj(data, out)


# --------------------------------------------------------------------------- the TA's side

class Link:
    """A connected Dask client and the cluster's capacity when the batch started."""

    def __init__(self, client: Any, threads: int):
        self.client = client
        self.threads = threads

    def in_flight(self, jobs: int) -> int:
        """Submissions sent at once: ``--jobs``, at least twice the cluster's worker threads
        (so that no worker waits for the TA's machine)."""
        return max(1, int(jobs), 2 * self.threads)


@dataclass(frozen=True)
class Tls:
    """The TA's TLS credentials for a ``tls://`` scheduler (PEM files): the CA that signed the
    scheduler's and workers' certificates, and the TA's own certificate and key. Keep them
    readable by the TA only; on the grading machines the workers' key files belong to root
    (mode 0600), out of student code's reach at every level."""
    ca_file: str
    cert: str
    key: str

    def security(self) -> Any:
        from distributed.security import Security
        return Security(tls_ca_file=self.ca_file, tls_client_cert=self.cert, tls_client_key=self.key,
                        require_encryption=True)


def connect(address: str, timeout: float = WORKERS_TIMEOUT, tls: Tls | None = None) -> Link:
    """A client of the scheduler at ``address`` (over TLS with ``tls``), once a worker has
    joined and every worker runs this kit's build; :class:`ClusterError` otherwise."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError(f"--scheduler needs Dask, which is not installed: {INSTALL_HINT}") from None
    if tls is None and address.startswith("tls://"):
        raise ClusterError(f"{address} is a TLS scheduler: give --tls-ca-file, --tls-cert and --tls-key")
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False,
                        security=tls.security() if tls else None)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"no Dask scheduler answers at {address}: {exc}") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
        builds = client.run(_worker_build)
        wrong = {addr: build for addr, build in builds.items() if build != resume.build_id()}
        if wrong:
            raise ClusterError(f"{len(wrong)} worker(s) run another build of the kit than this one "
                               f"({resume.build_id()}): " + ", ".join(f"{a} has {b}" for a, b in sorted(wrong.items()))
                               + "; install the wheel that `build` wrote for this build on them")
        threads = sum(client.nthreads().values())
    except (OSError, TimeoutError) as exc:
        client.close()
        raise ClusterError(f"the cluster at {address} has no worker ready: {exc}") from None
    except ClusterError:
        client.close()
        raise
    return Link(client, threads)


def _worker_build() -> str:
    return resume.build_id()


def choose_pool(runner: Any, link: Link | None, warm: bool, worker_user: str) -> Any:
    """What ``runner.execute`` hands each job to: the cluster, local warm graders, or nothing
    (``--cold``: one ``grade`` subprocess per student)."""
    if link is not None:
        return ClusterPool(runner, link, warm, worker_user)
    if warm:
        from autograder.batching.pool import WarmPool
        return WarmPool(runner)
    return None


class ClusterPool:
    """Sends each staged submission to the cluster; same interface as the local
    :class:`~autograder.batching.pool.WarmPool` (``start``, ``execute``, ``stop_all``, ``close``)."""

    def __init__(self, runner: Any, link: Link, warm: bool, worker_user: str):
        self.runner, self.link = runner, link
        self.settings = {"exercises": [ex.id for ex in runner.exercises], "call_timeout": runner.call_timeout,
                         "student_timeout": runner.student_timeout, "job_memory_mb": runner.memory.limit_mb,
                         "warm": bool(warm), "worker_user": worker_user, "times": runner.times.settings()}
        self.futures: set[Any] = set()
        self.graded_by: dict[str, tuple[str, str]] = {}     # job key -> (worker address, worker user)
        self.task_keys: dict[str, str] = {}                  # job key -> its Dask task's key
        self.lock = threading.Lock()
        self.stopped = threading.Event()

    def start(self) -> None:
        """Nothing to start here: the cluster's workers are running already."""

    def execute(self, key: str, job_file: Path, worker_user: str) -> tuple[int, bytes, bool]:
        """Grade job ``key`` (its opaque job file: the staged copy and where its results go) on
        the cluster: ``(exit code, log, timed out)``; ``results.json`` written where the job
        file says when the grader wrote one."""
        from autograder import jobs as private_jobs
        job = private_jobs.read_job(job_file)
        staged, results_path = Path(job["submission"]), Path(job["results"])
        rel = Path(staged).resolve().relative_to(self.runner.stage_root.resolve())
        task = {"build": resume.build_id(), "settings": self.settings, "runner": type(self.runner),
                "top": rel.parts[0], "sub": "/".join(rel.parts[1:]), "blob": pack(self.runner.stage_root / rel.parts[0])}
        future = self.link.client.submit(grade_task, task, key=f"ag-grade-{uuid.uuid4().hex}",
                                         retries=RETRIES, pure=False)
        with self.lock:
            self.futures.add(future)
            self.task_keys[key] = future.key
        try:
            while not future.done():
                if self.stopped.wait(0.2):
                    future.cancel()
                    return -1, b"not graded: the batch was interrupted\n", False
            try:
                done = future.result()
            except Exception as exc:  # noqa: BLE001 - any failure is this submission's zero row
                return -1, _failure(exc).encode(), False
        finally:
            with self.lock:
                self.futures.discard(future)
        if done.get("results") is not None:                  # written atomically, as the grader does
            results_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = results_path.with_name(f".{results_path.name}.{uuid.uuid4().hex[:8]}")
            tmp.write_bytes(done["results"])
            tmp.replace(results_path)
        self.graded_by[key] = (str(done.get("worker", "")), str(done.get("worker_user", "")))
        where = f"cluster: graded by Dask worker {done.get('worker')} as {done.get('worker_user')}\n".encode()
        return int(done["code"]), where + bytes(done["log"]), bool(done["timed_out"])

    def stop_all(self) -> None:
        self.stopped.set()
        with self.lock:
            futures = list(self.futures)
        for future in futures:
            future.cancel()

    def close(self) -> None:
        self.stop_all()
        self.link.client.close()


def _failure(exc: BaseException) -> str:
    """The log's last line (the row's reason) for a task the cluster could not grade."""
    name = type(exc).__name__
    if name == "KilledWorker":
        return ("\nthe cluster could not grade it: the Dask workers running it died each time "
                "(distributed.scheduler.allowed-failures)\n")
    if isinstance(exc, BuildMismatch):
        return f"\nthe cluster refused it: {exc}\n"
    return f"\nthe cluster could not grade it ({name}: {str(exc)[:200]})\n"


# --------------------------------------------------------------------------- the worker's side

_sides: dict[tuple, Any] = {}
_sides_lock = threading.Lock()
_threads = ThreadPoolExecutor(max_workers=MAX_SLOTS, thread_name_prefix="ag-cluster")   # live as long as
_leases = threading.local()                     # the process: they start the warm graders (parent-death)


def grade_task(task: JSONObject) -> JSONObject:
    """On a Dask worker: grade one packed submission with the TA's settings; the same
    ``Runner.execute`` as a local job. Idempotent: every run grades in fresh private folders
    and removes them."""
    if task["build"] != resume.build_id():
        raise BuildMismatch(f"this worker runs kit build {resume.build_id()}, the batch is build {task['build']}: "
                            "install the wheel that `build` wrote for the batch's build on the worker machines")
    _refuse_unless_student_code_is_cut_off()
    runner = _runner(task["runner"], task["settings"])
    worker_user = _lease(task["settings"]["worker_user"])
    job = uuid.uuid4().hex
    stage = runner.stage_root / job
    folder = runner.out_dir / job
    try:
        unpack(task["blob"], stage / task["top"])
        staged = stage / task["top"] / task["sub"] if task["sub"] else stage / task["top"]
        folder.mkdir(parents=True)
        results_path = folder / "results.json"
        from autograder import jobs as private_jobs
        job_file = private_jobs.write_job(runner.stage_root, job, staged, results_path, runner.hide)
        code, log, timed_out = _threads.submit(runner.execute, job, job_file, worker_user).result()
        try:
            data = results_path.read_bytes() if results_path.stat().st_size <= RESULTS_MAX_BYTES else None
        except OSError:
            data = None
        return {"code": code, "log": log[-LOG_MAX_BYTES:], "timed_out": timed_out, "results": data,
                "worker_user": worker_user, "worker": _worker_address()}
    finally:
        filetree.remove(stage)
        filetree.remove(folder)
        (runner.stage_root / f"{job}.json").unlink(missing_ok=True)


class UnsafeWorker(RuntimeError):
    """This machine cannot keep student code off the network: it refuses the task."""


def _refuse_unless_student_code_is_cut_off() -> None:
    """Student code graded here must not reach the scheduler or this worker (it could replace
    the grading function for every later task): a worker user, or at least the seccomp filter
    that leaves it no socket but AF_UNIX. A machine with neither refuses every task."""
    from autograder.sandbox import levels, netfilter
    if levels.detect()[0] == "process" and netfilter.program() is None:
        raise UnsafeWorker("this Dask worker runs without root and has no seccomp filter for its "
                           "machine: student code could reach the scheduler; run it as root, or on "
                           "x86-64 or aarch64 Linux")


def _worker_address() -> str:
    try:
        from distributed import get_worker
        return str(get_worker().address)
    except (ImportError, ValueError):
        return "(not in a Dask worker)"


def _runner(runner_class: type, settings: dict) -> Any:
    """This worker process's runner for these settings (its warm graders stay for the next task)."""
    key = tuple(sorted((k, str(v)) for k, v in settings.items()))
    with _sides_lock:
        runner = _sides.get(key)
        if runner is None:
            threads, hide = 1, []
            try:
                from distributed import get_worker
                worker = get_worker()
                threads, hide = int(worker.state.nthreads), [str(worker.local_directory)]
            except (ImportError, ValueError, AttributeError):
                pass
            from autograder.batching.runner import GradeTimes
            runner = runner_class(private_jobs.private_folder("ag-cluster-out-"),
                                  contract.select(",".join(settings["exercises"])),
                                  call_timeout=float(settings["call_timeout"]),
                                  student_timeout=float(settings["student_timeout"]), python=sys.executable,
                                  jobs=threads, hide=hide, job_memory_mb=int(settings["job_memory_mb"]),
                                  times=GradeTimes.from_settings(settings.get("times", {})))
            runner.pool = choose_pool(runner, None, bool(settings["warm"]), settings["worker_user"])
            if not _sides:
                atexit.register(_close_runners)
            _sides[key] = runner
        return runner


def _close_runners() -> None:
    """When the worker process ends: its warm graders, private copies and output folders."""
    for runner in _sides.values():
        runner.close()
        filetree.remove(runner.out_dir)


def _lease(base: str) -> str:
    """The worker user of this thread's slot on this machine: slot 1 is ``base``, slot k
    ``f"{base}{k}"``, held (a lock file, released when the process ends) for the thread's life."""
    held = getattr(_leases, "users", {})
    if base in held:
        return held[base]
    folder = Path(tempfile.gettempdir()) / f"ag-cluster-slots-{os.geteuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise RuntimeError(f"{folder} is not a private folder of this user: refusing to use it for slot locks")
    for slot in range(1, MAX_SLOTS + 1):
        fd = os.open(folder / f"{base}-{slot}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        held[base] = base if slot == 1 else f"{base}{slot}"
        _leases.users = held
        return held[base]
    raise RuntimeError(f"more than {MAX_SLOTS} grading slots on this machine")
