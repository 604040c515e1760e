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
from autograder import filetree, results, seeds
from autograder import jobs as private_jobs
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
            # The checkout's secret is part of what grades (the hidden inputs), and it is made
            # on first use: made now, so that this id, computed once per process, is the one
            # every later process computes too (a batch that started before the first grading
            # otherwise disagreed with the Dask workers started after it). Dotfiles are left
            # out: the secret's half-written temporary (.SEED_SECRET.*) is one.
            seeds.file_secret()
            digest = hashlib.sha256()
            for base in (package, package.parent / "reference"):
                for path in sorted(base.rglob("*")):
                    rel = path.relative_to(package.parent).as_posix()
                    if (path.is_file() and "__pycache__" not in rel and not rel.endswith((".pyc", ".pyo"))
                            and not path.name.startswith(".")):
                        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
            _build_id = "checkout-" + digest.hexdigest()[:16]
    return _build_id


def submission_digest(path: Path) -> str | None:
    """sha256 of a submission (folder or file) as it would be staged, walked the same way and
    within the same bounds (:func:`autograder.jobs.stage_bounds`; no recursion, any depth);
    None if unreadable or past those bounds (staging refuses it too: never kept)."""
    digest = hashlib.sha256()
    try:
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            _digest_one(digest, "", info, lambda: os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)),
                        lambda: os.readlink(path))
            return digest.hexdigest()
        digest.update(b"D\0")
        for entry in filetree.walk(path, private_jobs.stage_bounds()):
            if entry.kind is filetree.Kind.FOLDER:
                digest.update((b"T" if entry.too_deep else b"D") + _name(entry.rel) + b"\0")
            else:
                _digest_one(digest, entry.rel, entry.info, entry.open,
                            lambda e=entry: os.readlink(e.name, dir_fd=e.dir_fd))
    except (OSError, filetree.TooLarge):
        return None
    return digest.hexdigest()


def _name(rel: str) -> bytes:
    return ("/" + rel).encode("utf-8", "surrogateescape")


def _digest_one(digest: "hashlib._Hash", rel: str, info: os.stat_result, opener, readlink) -> None:
    """One entry that is not a folder: a link by its target, a file by its bytes."""
    kind = filetree.kind_of(info)
    if kind is filetree.Kind.LINK:
        digest.update(b"L" + _name(rel) + b"\0" + os.fsencode(readlink()) + b"\0")
    elif kind is filetree.Kind.FILE:
        digest.update(b"F" + _name(rel) + b"\0" + str(info.st_size).encode() + b"\0")
        with os.fdopen(opener(), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    else:
        digest.update(b"O" + _name(rel) + b"\0")


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
        try:
            key = keys[entry.key] = result_key(entry.path, settings)
        except Exception:  # noqa: BLE001 - a submission that cannot be keyed is graded, never kept
            key = keys[entry.key] = None
        row = kept(results_dir / entry.key, key, make_row(entry))
        if row is not None:
            rows[entry.key] = row
        else:
            forget(results_dir / entry.key)
            todo.append(entry)
    return rows, todo, keys
