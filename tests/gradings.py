"""Each corpus case graded once per test run, whichever test process asks first.

A case (a submission's files, the exercises graded, the hidden-input secret) is graded by the
engine in the asking process and its :class:`~autograder.results.Results` stored on disk in a
folder every test process of the run shares; every other test about that case, in any
process, reads it back. A lock per case makes a second process wait for the first instead of
grading the same case again, so pytest-xdist can hand the tests of one case to different
processes without paying twice.
"""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import tempfile
from pathlib import Path

from autograder import results, seeds
from helpers import grade_folder


Files = dict[str, bytes | str]          # path in the submission -> its bytes (or text, as UTF-8)


def _bytes(content: bytes | str) -> bytes:
    return content if isinstance(content, bytes) else content.encode("utf-8")


def key_of(files: Files, exercises: str, secret: str | None, only: tuple[str, ...] = ()) -> str:
    """A case's identity: its files' names and bytes, the exercises, the secret, the tests run."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + _bytes(files[name]) + b"\0")
    digest.update(exercises.encode() + b"\0" + (secret or "checkout").encode())
    for word in only:
        digest.update(b"\0only\0" + word.encode())
    return digest.hexdigest()[:32]


def _to_record(outcome: results.Results) -> dict:
    return {"tests": [dataclasses.asdict(t) for t in outcome.tests],
            "exercises": [o.to_json() for o in outcome.exercises],
            "isolation": outcome.isolation, "execution_time": outcome.execution_time}


def _from_record(record: dict) -> results.Results:
    return results.Results(tests=[results.TestResult(**{**t, "cause": tuple(t.get("cause") or ())})
                                  for t in record["tests"]],
                           exercises=[results.ExerciseOutcome.from_json(o) for o in record["exercises"]],
                           isolation=record["isolation"], execution_time=record["execution_time"])


class Gradings:
    """The run's shared store of gradings (``store``: a folder every test process sees)."""

    def __init__(self, store: Path):
        self.store = store
        self.store.mkdir(parents=True, exist_ok=True)
        self._memory: dict[str, results.Results] = {}

    def grade(self, files: Files, exercises: str, secret: str | None = None,
              only: tuple[str, ...] = ()) -> results.Results:
        """``files`` (path -> bytes or text) graded on ``exercises`` under ``secret`` (None: the
        checkout's own), once per run; ``only``: just the tests whose name holds one of these
        words (``only_titles.py``)."""
        key = key_of(files, exercises, secret, only)
        if key in self._memory:
            return self._memory[key]
        done = self.store / f"{key}.json"
        with open(self.store / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)          # another process grading it: wait for it
            if not done.exists():
                outcome = _grade(files, exercises, secret, only)
                tmp = done.with_suffix(".tmp")
                tmp.write_text(json.dumps(_to_record(outcome)), encoding="utf-8")
                tmp.replace(done)
        self._memory[key] = _from_record(json.loads(done.read_text(encoding="utf-8")))
        return self._memory[key]

    def grade_folder(self, folder: Path, exercises: str, secret: str | None = None,
                     skip: tuple[str, ...] = ("BUG.txt",)) -> results.Results:
        """A corpus folder's files (``skip`` left out), graded once per run."""
        files: Files = {p.relative_to(folder).as_posix(): p.read_bytes()
                        for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in skip
                        and "__pycache__" not in p.parts}
        return self.grade(files, exercises, secret)

    def score(self, folder: Path, exercise_id: str, secret: str | None = None) -> float:
        """The kit's own score for ``folder``'s ``exercise_id`` (what the interop tests hold
        otter's and nbgrader's scores to), graded once per run. The workers come from the
        zygote ``conftest.py`` forked before any test, so threads this process starts later
        (the interop tests' Jupyter and nbgrader code) never reach them."""
        return self.grade_folder(folder, exercise_id, secret).by_exercise()[exercise_id][0]


def _grade(files: Files, exercises: str, secret: str | None, only: tuple[str, ...]) -> results.Results:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submission"
        for name, content in files.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_bytes(content))
        if secret is None:
            return grade_folder(folder, exercises, only=only)
        with seeds.secret_override(secret):
            return grade_folder(folder, exercises, only=only)
