"""Grading one submission of a batch: a ``grade`` subprocess in its own session, bounded.

:class:`Runner` starts ``python -m autograder grade --job <stage>/<job key>.json`` for one
entry (or hands it to a warm grader, :mod:`autograder.batching.pool`, or to a Dask cluster,
:mod:`autograder.batching.cluster`), stops it at ``--student-timeout``, and turns what it left
behind into a :class:`Row`: the scores of its ``results.json``, or a zero row with the reason
(and a ``results.json`` that says so) when the grader failed, hung or wrote nothing.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import autograder
from autograder import contract, filetree, results
from autograder import jobs as private_jobs
from autograder.batching.discovery import Entry
from autograder.jsontypes import JSONObject
from autograder.sandbox import lifetime
from autograder.sandbox.lifetime import BATCH_ENV
from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT, default_worker_user
from autograder.vocabulary import Word

KIT_ROOT = autograder.repo_root()
LOG_LIMIT = 64 * 1024
KILL_GRACE = 5.0
# Job slot k > 1 runs as the worker user f"{base}{k}" (base: sandbox/limits.default_worker_user()).


class RowStatus(Word):
    """How grading one submission of a batch ended (the gradebook's ``status`` column)."""
    OK = "ok"
    NO_FILES = "no files"          # none of the graded files was in the submission
    TIMEOUT = "timeout"            # the grader ran past --student-timeout
    ERROR = "error"                # the grader failed or wrote no (complete) results


@dataclass
class Row:
    """One graded submission: a gradebook row."""
    entry: Entry
    scores: dict[str, float] = field(default_factory=dict)        # by exercise id
    max_scores: dict[str, float] = field(default_factory=dict)
    total: float = 0.0
    status: RowStatus = RowStatus.OK
    reason: str = ""
    seconds: float = 0.0
    tests: list[dict] = field(default_factory=list)               # results.json "tests"
    isolation: str = ""           # the level the grader reported (results.json extra_data)


# --------------------------------------------------------------------------- grading one

@dataclass(frozen=True)
class GradeTimes:
    """``grade``'s time limits besides ``--timeout`` that a batch hands to every grader, as
    ``grade`` takes them (``None``/empty: ``grade``'s defaults)."""
    import_timeout: float | None = None
    budgets: tuple[tuple[str, float], ...] = ()          # (exercise id, seconds), as given
    exercise_budget: float | None = None

    @classmethod
    def from_args(cls, args) -> "GradeTimes":
        """From ``batch``'s options (:func:`autograder.cli.add_time_arguments`), checked as
        ``grade`` checks them: a ValueError says what is wrong."""
        from autograder.cli import parse_budgets
        return cls(args.import_timeout, tuple(parse_budgets(args.budget).items()), args.exercise_budget)

    def argv(self) -> list[str]:
        """The ``grade`` options that give these limits."""
        out: list[str] = []
        if self.import_timeout is not None:
            out += ["--import-timeout", repr(float(self.import_timeout))]
        if self.budgets:
            out += ["--budget", ",".join(f"{ex}={float(s)!r}" for ex, s in self.budgets)]
        if self.exercise_budget is not None:
            out += ["--exercise-budget", repr(float(self.exercise_budget))]
        return out

    def settings(self) -> JSONObject:
        """What a kept result must have been graded with (``resume``) and what a cluster worker
        rebuilds these from: only the limits set, so results graded with the defaults stay kept."""
        out: JSONObject = {}
        if self.import_timeout is not None:
            out["import_timeout"] = float(self.import_timeout)
        if self.budgets:
            out["budgets"] = {ex: float(s) for ex, s in self.budgets}
        if self.exercise_budget is not None:
            out["exercise_budget"] = float(self.exercise_budget)
        return out

    @classmethod
    def from_settings(cls, settings: JSONObject) -> "GradeTimes":
        return cls(settings.get("import_timeout"), tuple(settings.get("budgets", {}).items()),
                   settings.get("exercise_budget"))


class Runner:
    """Grades entries in subprocesses; remembers the live ones so they can be stopped."""

    def __init__(self, out_dir: Path, exercises: tuple[contract.Exercise, ...], *,
                 call_timeout: float = DEFAULT_CALL_TIMEOUT, student_timeout: float = 600.0,
                 python: str | None = None, jobs: int = 1, hide: list[str] | None = None,
                 memory_mb: int = 1024, job_memory_mb: int | None = None, isolation: str | None = None,
                 times: GradeTimes = GradeTimes()):
        self.isolation = isolation if isolation not in (None, "auto") else None
        self.out_dir = Path(out_dir).resolve()
        self.hide = list(hide or []) + [str(self.out_dir)]
        self.stage_root = private_jobs.private_folder()
        self.hide.append(str(self.stage_root))         # the other jobs' copies (root-owned 0700 too)
        self.memory = private_jobs.MemoryGroups(job_memory_mb or memory_mb + private_jobs.GRADER_OVERHEAD_MB + 300)
        self.memory_mb = memory_mb if self.memory.kind else private_jobs.memory_share_mb(jobs, memory_mb)
        self.exercises = exercises
        self.call_timeout = call_timeout
        self.times = times
        self.student_timeout = student_timeout
        self.python = python or sys.executable
        self._live: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self.stopping = False
        self.pool = None              # warm graders (autograder.batching.pool.WarmPool), when used
        # One worker user per job slot: the process limit (RLIMIT_NPROC) counts per user, so
        # parallel graders sharing a user would eat into each other's limit.
        self._slots: queue.SimpleQueue[str] = queue.SimpleQueue()
        base = default_worker_user()
        for slot in range(max(1, int(jobs))):
            self._slots.put(base if slot == 0 else f"{base}{slot + 1}")

    def command(self, job: Path, worker_user: str) -> list[str]:
        """The grader's command line: an opaque job file (the paths are inside it), so no
        classmate's worker can read a name in ``/proc/*/cmdline``."""
        cmd = [self.python, "-m", "autograder", "grade", "--job", str(job), "--timeout", f"{self.call_timeout:g}",
               "--worker-user", worker_user, "--memory-mb", str(self.memory_mb)]
        cmd += ["--isolation", self.isolation] if self.isolation else []
        cmd += self.times.argv()
        if tuple(self.exercises) != contract.DEFAULT:      # `grade` alone grades DEFAULT
            cmd += ["--exercises", ",".join(ex.id for ex in self.exercises)]
        return cmd

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(KIT_ROOT), env.get("PYTHONPATH")) if p)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.setdefault(var, "1")                  # parallel jobs: no thread oversubscription
        env.setdefault("MPLBACKEND", "Agg")
        env.setdefault("PYTHONHASHSEED", "0")          # inherited by the forked workers: same runs
        env.pop("PYTEST_ADDOPTS", None)
        env[BATCH_ENV] = str(os.getpid())             # a grader ends if the batch is killed
        return env

    def grade(self, entry: Entry) -> Row:
        folder = self.out_dir / "results" / entry.key
        folder.mkdir(parents=True, exist_ok=True)
        results_path = folder / "results.json"
        results_path.unlink(missing_ok=True)
        started = time.monotonic()
        row = Row(entry=entry)
        if self.stopping:
            return self._zero(row, results_path, RowStatus.ERROR, "not graded: the batch was interrupted")
        key = private_jobs.job_key()                  # opaque: all a neighbour could see of this job
        try:
            job = private_jobs.write_job(self.stage_root, key, self.stage(entry, key), results_path, self.hide)
        except (private_jobs.StagingError, OSError) as exc:
            self.unstage(key, None)
            return self._zero(row, results_path, RowStatus.ERROR, f"not graded: {results.one_line(exc)}")
        worker_user = self._slots.get()
        try:
            code, log, timed_out = self.execute(key, job, worker_user)
        finally:
            self._slots.put(worker_user)
            self.unstage(key, None)
        row.seconds = time.monotonic() - started
        (folder / "grade.log").write_bytes(_tail(log or b"", LOG_LIMIT))
        if timed_out:
            why = f"grading took longer than {self.student_timeout:g} s and was stopped"
            data = _load_results(results_path)
            if data and data.get("tests"):
                return self._partial(row, data, RowStatus.TIMEOUT, why)
            return self._zero(row, results_path, RowStatus.TIMEOUT, why)
        if self.stopping and code != 0:
            return self._zero(row, results_path, RowStatus.ERROR, "not graded: the batch was interrupted")
        return self._read(row, results_path, code, log or b"")

    def execute(self, key: str, job: Path, worker_user: str) -> tuple[int, bytes, bool]:
        """Grade job ``key`` (its job file ``job``) in a ``grade`` subprocess in its own memory
        group: ``(exit code, output, timed out)``; with warm graders
        (:mod:`autograder.batching.pool`), in the slot's warm grader instead."""
        if self.pool is not None:
            return self.pool.execute(key, job, worker_user)
        group = self.memory.create(key)
        command = self.memory.wrap(self.command(job, worker_user), group)
        proc = subprocess.Popen(command, cwd=self.stage_root / key,
                                env=self.environment(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        with self._lock:
            self._live.add(proc)
        timed_out = False
        try:
            log, _ = proc.communicate(timeout=self.student_timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            log = self._stop(proc)
        finally:
            with self._lock:
                self._live.discard(proc)
            self.memory.remove(group)
        return proc.returncode, log or b"", timed_out

    def _stop(self, proc: subprocess.Popen) -> bytes:
        """SIGINT first (the grader's clean-up kills its worker), then SIGKILL."""
        for sig, grace in ((signal.SIGINT, KILL_GRACE), (signal.SIGKILL, KILL_GRACE)):
            lifetime.signal_group(proc.pid, sig)
            try:
                out, _ = proc.communicate(timeout=grace)
                return out or b""
            except subprocess.TimeoutExpired:
                continue
        return b""

    def stop_all(self) -> None:
        """Stop every running grader at once: SIGINT, then SIGKILL after ``KILL_GRACE``. Only
        signals and waits: the threads grading them still read their output."""
        self.stopping = True
        if self.pool is not None:
            self.pool.stop_all()
        with self._lock:
            live = list(self._live)
        for sig in (signal.SIGINT, signal.SIGKILL):
            for proc in live:
                lifetime.signal_group(proc.pid, sig)
            deadline = time.monotonic() + KILL_GRACE
            while time.monotonic() < deadline and any(p.poll() is None for p in live):
                time.sleep(0.05)
            live = [p for p in live if p.poll() is None]
            if not live:
                return

    def stage(self, entry: Entry, key: str) -> Path:
        """The private copy this job grades: ``<stage root>/<job key>/`` (a folder's contents)
        or ``<stage root>/<job key>/submission.zip`` (no student name in either)."""
        dest = self.stage_root / key
        private_jobs.stage_copy(entry.path, dest, "submission.zip")
        return dest if entry.path.is_dir() and not entry.path.is_symlink() else dest / "submission.zip"

    def unstage(self, key: str, group: Path | None) -> None:
        filetree.remove(self.stage_root / key)
        (self.stage_root / f"{key}.json").unlink(missing_ok=True)
        self.memory.remove(group)

    def close(self) -> None:
        """Stop the pool's graders and remove the private copies' folder (any depth)."""
        if self.pool is not None:
            self.pool.close()
        filetree.remove(self.stage_root)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _read(self, row: Row, results_path: Path, code: int, log: bytes) -> Row:
        data = _load_results(results_path)
        partial = isinstance(data, dict) and data.get("tests") and not _complete(data)
        if code != 0 or not isinstance(data, dict) or not data.get("tests") or partial:
            last = results.one_line(_last_line(log) or "no output", 200)
            why = (f"the grader exited with code {code}" if code != 0 else
                   "the grader wrote no test results" if not partial else
                   "the grader stopped before it finished") + f": {last}"
            if partial:
                return self._partial(row, data, RowStatus.ERROR, why)
            return self._zero(row, results_path, RowStatus.ERROR, why)
        self._fill(row, data)
        return row

    def _fill(self, row: Row, data: dict) -> None:
        """Scores and the reason from a results.json: its structured per-exercise outcomes
        (``extra_data.exercises``), never its messages."""
        row.tests = [t for t in data["tests"] if isinstance(t, dict)]
        extra = data.get("extra_data") if isinstance(data.get("extra_data"), dict) else {}
        row.isolation = results.one_line(extra.get("isolation", ""), 40)
        outcomes = results.outcomes_from_json(data)
        totals = results.totals_by_exercise(row.tests)
        for ex in self.exercises:
            if ex.id in outcomes:
                row.scores[ex.id], row.max_scores[ex.id] = outcomes[ex.id].score, outcomes[ex.id].max_score
            else:
                row.scores[ex.id], row.max_scores[ex.id] = totals.get(ex.id, (0.0, 0.0))
        row.total = round(sum(row.scores.values()), results.SCORE_DECIMALS)
        Status = results.ExerciseStatus
        by_status: dict[results.ExerciseStatus, list[str]] = {}
        for ex in self.exercises:
            outcome = outcomes.get(ex.id)
            if outcome is not None and outcome.status is not Status.GRADED:
                by_status.setdefault(outcome.status, []).append(ex.id)
        absent = by_status.get(Status.MISSING, []) + by_status.get(Status.REFUSED, [])
        if len(absent) == len(self.exercises) and not by_status.get(Status.REFUSED):
            row.status, row.reason = RowStatus.NO_FILES, "none of the graded files was found in the submission"
            return
        row.reason = "; ".join(f"{status.note}: {', '.join(ids)}" for status, ids in by_status.items())

    def _partial(self, row: Row, data: dict, status: RowStatus, reason: str) -> Row:
        """The grader stopped after some exercises: keep their scores (the grader's own partial
        results.json stays), the others score zero."""
        self._fill(row, data)
        done = ", ".join(results.outcomes_from_json(data)) or "none"
        row.status = status
        row.reason = f"{reason} (exercises graded before it stopped: {done})" + \
            (f"; {row.reason}" if row.reason else "")
        return row

    def _zero(self, row: Row, results_path: Path, status: RowStatus, reason: str) -> Row:
        row.status, row.reason, row.total = status, reason, 0.0
        row.scores = {ex.id: 0.0 for ex in self.exercises}
        row.max_scores = {ex.id: float(ex.points) for ex in self.exercises}
        results.write_atomic(results_path, results.placeholder(
            f"This submission could not be graded automatically ({reason}). Course staff will "
            "look at it."))
        return row


def _load_results(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _complete(data: dict) -> bool:
    """False for a results.json the grader wrote while grading was still under way."""
    extra = data.get("extra_data")
    return not (isinstance(extra, dict) and extra.get("complete") is False)


def _tail(data: bytes, limit: int) -> bytes:
    return data if len(data) <= limit else b"[... earlier output cut ...]\n" + data[-limit:]


def _last_line(log: bytes) -> str:
    lines = [ln.strip() for ln in log.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""
