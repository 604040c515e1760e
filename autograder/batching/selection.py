"""``batch --only NAME,…``: regrade the named students, keep every other row.

A name matches a submission when it equals (case-insensitively) its display name, its
results folder key, its folder or zip name, or any member's name, email or SID. Every other
submission keeps its last complete result (``results/<key>/complete.json`` with an unchanged
``results.json``; kept even when the kit or the settings changed since: the TA asked not to
regrade them, and the report says how many were kept); one without any is not graded and gets
an ``error`` row saying so.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

from autograder.batching import resume
from autograder.jsontypes import JSONObject
from autograder.batching.discovery import Entry

NO_EARLIER_RESULT = "not graded: --only named other students and this one has no earlier result"


class UnknownStudents(ValueError):
    """``--only`` named someone the class folder does not hold."""


def names_of(entry: Entry) -> set[str]:
    """Every name ``--only`` may use for ``entry`` (lower-cased)."""
    names = {entry.student, entry.key, entry.path.name, entry.path.stem}
    for person in entry.members:
        names.update({person.name, person.email, person.sid})
    return {n.strip().lower() for n in names if n and n.strip()}


def parse(text: str | None) -> list[str]:
    """``--only``'s comma list (empty names dropped)."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def chosen(entries: Sequence[Entry], names: Iterable[str]) -> set[str]:
    """The keys of the entries ``names`` match; raises :class:`UnknownStudents` for a name
    that matches none."""
    wanted = {n.strip().lower(): n for n in names if n.strip()}
    keys, unknown = set(), []
    for lowered, original in wanted.items():
        hits = [e.key for e in entries if lowered in names_of(e)]
        if not hits:
            unknown.append(original)
        keys.update(hits)
    if unknown:
        raise UnknownStudents(f"--only: no submission matches {', '.join(sorted(unknown))}")
    return keys


def split(entries: Sequence[Entry], results_dir: Path, settings: JSONObject, make_row: Callable[[Entry], object],
          keys_to_grade: set[str]) -> tuple[dict, list, dict, list[str], list[str]]:
    """Like :func:`autograder.batching.resume.split`: ``(kept rows by key, entries to grade,
    result keys by key, keys with no result to keep, keys kept although their result was made
    by another build, other settings or other submission files)``: the chosen entries are
    graded, every other one keeps its last complete result."""
    rows, todo, keys, missing, stale = {}, [], {}, [], []
    for entry in entries:
        keys[entry.key] = resume.result_key(entry.path, settings)
        folder = Path(results_dir) / entry.key
        if entry.key in keys_to_grade:
            resume.forget(folder)
            todo.append(entry)
            continue
        row = resume.kept(folder, keys[entry.key], make_row(entry))
        if row is None:
            row = resume.kept(folder, keys[entry.key], make_row(entry), any_key=True)
            if row is not None:
                stale.append(entry.key)
        if row is None:
            missing.append(entry.key)
        else:
            rows[entry.key] = row
    return rows, todo, keys, missing, stale
