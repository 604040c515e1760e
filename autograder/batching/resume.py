"""A batch that resumes where it stopped.

Each submission's result is keyed by the kit's build id (:func:`build_id`), the grading
settings that change scores (exercises, call timeout) and a digest of the submission's bytes
(:func:`submission_digest`: names, file contents and link targets, walked the way
:func:`autograder.jobs.stage_copy` copies them). When one submission is done, its marker
``results/<key>/complete.json`` is written atomically, *after* its ``results.json``; it holds
that key, the row's scores and the sha256 of the ``results.json`` it describes. A batch started
again with the same arguments keeps every row whose marker matches (same key, ``results.json``
unchanged) and grades the others; a stopped or killed batch leaves no marker for the
submissions it was grading.

Only rows whose grader finished are kept (``ok`` and ``no files``): timeouts and errors, often
the machine's fault rather than the submission's, are graded again.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import asdict
from pathlib import Path
from typing import Iterable

import autograder
from autograder.jsontypes import JSONObject
from autograder import results
from autograder.batching.runner import RowStatus

MARKER = "complete.json"
KEPT_STATUSES = (RowStatus.OK, RowStatus.NO_FILES)
_ROW_FIELDS = ("scores", "max_scores", "total", "status", "reason", "seconds", "isolation")
_build_id: str | None = None


def build_id() -> str:
    """The build id of the kit that grades: ``BUILD_INFO.json``'s (a wheel or a Gradescope zip),
    else, in a checkout, a digest of the kit's and the reference's files (``checkout-…``)."""
    global _build_id
    if _build_id is None:
        package = Path(autograder.__file__).resolve().parent
        info = package / "BUILD_INFO.json"
        if info.is_file():
            _build_id = str(json.loads(info.read_text(encoding="utf-8"))["build_id"])
        else:
            digest = hashlib.sha256()
            for base in (package, package.parent / "reference"):
                for path in sorted(base.rglob("*")):
                    rel = path.relative_to(package.parent).as_posix()
                    if path.is_file() and "__pycache__" not in rel and not rel.endswith((".pyc", ".pyo")):
                        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
            _build_id = "checkout-" + digest.hexdigest()[:16]
    return _build_id


def submission_digest(path: Path) -> str | None:
    """sha256 of a submission (folder or file) as it would be staged; None if unreadable."""
    digest = hashlib.sha256()
    try:
        _digest_entry(Path(path), "", digest)
    except OSError:
        return None
    return digest.hexdigest()


def _digest_entry(path: Path, rel: str, digest: "hashlib._Hash") -> None:
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        digest.update(b"D" + rel.encode("utf-8", "surrogateescape") + b"\0")
        for name in sorted(os.listdir(path)):
            _digest_entry(path / name, f"{rel}/{name}", digest)
    elif stat.S_ISLNK(info.st_mode):
        digest.update(b"L" + rel.encode("utf-8", "surrogateescape") + b"\0"
                      + os.fsencode(os.readlink(path)) + b"\0")
    elif stat.S_ISREG(info.st_mode):
        digest.update(b"F" + rel.encode("utf-8", "surrogateescape") + b"\0" + str(info.st_size).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    else:
        digest.update(b"O" + rel.encode("utf-8", "surrogateescape") + b"\0")


def result_key(submission: Path, settings: JSONObject) -> str | None:
    """What a kept result must match: build, settings, submission bytes (None: never kept)."""
    content = submission_digest(submission)
    if content is None:
        return None
    text = json.dumps({"build": build_id(), "settings": settings, "submission": content}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _file_sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def record(folder: Path, key: str | None, row, run: str) -> None:
    """Mark ``folder``'s ``results.json`` as the complete result of ``key`` (atomically)."""
    if key is None or row.status not in KEPT_STATUSES:
        return
    sha = _file_sha(folder / "results.json")
    if sha is None:
        return
    fields = {name: value for name, value in asdict(row).items() if name in _ROW_FIELDS}
    results.write_atomic(folder / MARKER, {"key": key, "results_sha256": sha, "run": run, "row": fields})


def forget(folder: Path) -> None:
    """Before a submission is graded (again): no marker may describe a file being rewritten."""
    (folder / MARKER).unlink(missing_ok=True)


def kept(folder: Path, key: str | None, row, any_key: bool = False):
    """``row`` filled from ``folder``'s marker when it matches ``key`` (``any_key``: whatever
    build, settings and submission it was graded with: ``batch --only`` keeps the others), else None."""
    if key is None and not any_key:
        return None
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or (marker.get("key") != key and not any_key) \
            or marker.get("results_sha256") != _file_sha(folder / "results.json"):
        return None
    for name, value in (marker.get("row") or {}).items():
        if name == "status":
            try:
                value = RowStatus(value)
            except ValueError:
                return None
        if name in _ROW_FIELDS:
            setattr(row, name, value)
    row.tests = [t for t in data.get("tests", []) if isinstance(t, dict)]
    return row if row.status in KEPT_STATUSES else None


def split(entries: Iterable, results_dir: Path, settings: JSONObject, make_row) -> tuple[dict, list, dict]:
    """``(kept rows by entry key, entries to grade, result keys by entry key)``."""
    rows, todo, keys = {}, [], {}
    for entry in entries:
        key = keys[entry.key] = result_key(entry.path, settings)
        row = kept(results_dir / entry.key, key, make_row(entry))
        if row is not None:
            rows[entry.key] = row
        else:
            forget(results_dir / entry.key)
            todo.append(entry)
    return rows, todo, keys
