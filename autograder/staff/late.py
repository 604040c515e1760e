"""A late policy for the gradebook (``batch --due … --late-penalty … --late-cutoff … --extensions …``).

Off by default: without ``--due`` nothing is late and every grade is the raw total.

* **When was it submitted?** Gradescope's export metadata (``:created_at:`` of the
  submission) when there is one; otherwise the submission's own files: the newest
  modification time of the folder and everything in it (links are not followed), or of the
  ``.zip``. :class:`SubmissionTime` says which, and the report shows it.
* **Due date**: ``--due 2026-12-01T23:59:00+01:00`` (ISO 8601 with a UTC offset; ``Z`` for UTC).
  A per-student extension (``--extensions extensions.csv``) moves that student's due date
  (and cut-off by as much): a CSV with a header, one row per student, the student named by
  any of ``email``, ``sid`` or ``student`` (matched in that order, case-insensitively) and
  either ``due`` (a new due date) or ``extra_hours`` / ``extra_days``.
* **Penalty**: ``--late-penalty 10%/day``: 10 % of the points possible deducted for each
  started day late (``%/hour``, ``%/week``, ``%/12h``, ``%/2d`` too), never below zero:
  the convention of Canvas's own late policy (a percentage of the points possible per late
  day or hour, a partial period counting as one).
* **Cut-off**: ``--late-cutoff 2026-12-04T23:59:00+01:00`` (or ``+72h``, ``+3d`` after the
  due date): a submission after it scores zero.

:func:`apply` gives a :class:`LateOutcome` per person: the raw total, the final grade and
why. Grades are never changed in ``results.json``: the gradebook keeps both.
"""
from __future__ import annotations

import csv
import math
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.staff.model import SCORE_UNIT, exact

if TYPE_CHECKING:
    from autograder.batching.discovery import Entry, Member

PERIODS = {"minute": timedelta(minutes=1), "min": timedelta(minutes=1), "hour": timedelta(hours=1),
           "h": timedelta(hours=1), "day": timedelta(days=1), "d": timedelta(days=1),
           "week": timedelta(weeks=1), "w": timedelta(weeks=1)}
_PENALTY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+?)s?\s*$", re.IGNORECASE)
_OFFSET = re.compile(r"^\s*\+\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*$", re.IGNORECASE)
_FRACTION = re.compile(r"(\.\d{6})\d+")                  # Gradescope writes nanoseconds
_SPACED_OFFSET = re.compile(r"\s+([+-]\d\d:?\d\d|Z)$")


class PolicyError(ValueError):
    """A late-policy setting or an extensions file that cannot be read (said in words)."""


# --------------------------------------------------------------------------- parsing

def parse_time(text: str) -> datetime:
    """An ISO 8601 date and time with a UTC offset (``2026-12-01T23:59:00+01:00``, ``…Z``,
    Gradescope's ``2024-03-01 10:00:00.000000000 +00:00``); raises :class:`PolicyError`."""
    value = _SPACED_OFFSET.sub(r"\1", _FRACTION.sub(r"\1", str(text).strip()))
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise PolicyError(f"not a date and time: {text!r} (expected e.g. 2026-12-01T23:59:00+01:00)") from None
    if when.tzinfo is None:
        raise PolicyError(f"{text!r} has no UTC offset: write it as e.g. 2026-12-01T23:59:00+01:00 or …Z")
    return when


def _period(count: str | None, unit: str, text: str) -> timedelta:
    base = PERIODS.get(unit.lower())
    if base is None:
        raise PolicyError(f"{text!r}: unknown period {unit!r} (hour, day, week, h, d, w)")
    span = base * float(count) if count else base
    if span <= timedelta(0):
        raise PolicyError(f"{text!r}: the period must be longer than zero")
    return span


@dataclass(frozen=True)
class Penalty:
    """``percent`` of the points possible deducted for each started ``period`` late."""
    percent: Decimal
    period: timedelta
    text: str

    @classmethod
    def parse(cls, text: str) -> "Penalty":
        match = _PENALTY.match(text or "")
        if not match:
            raise PolicyError(f"--late-penalty {text!r}: expected PERCENT%/PERIOD, e.g. 10%/day or 2%/hour")
        percent = Decimal(match.group(1))
        if not 0 < percent <= 100:
            raise PolicyError(f"--late-penalty {text!r}: the percentage must be above 0 and at most 100")
        return cls(percent, _period(match.group(2), match.group(3), text), text.strip())

    def periods(self, late_by: timedelta) -> int:
        """Started periods in ``late_by`` (a second late is one period)."""
        return math.ceil(late_by / self.period) if late_by > timedelta(0) else 0

    def percent_for(self, late_by: timedelta) -> Decimal:
        return min(Decimal(100), self.percent * self.periods(late_by))


def parse_cutoff(text: str, due: datetime) -> datetime:
    """``--late-cutoff``: a date and time, or ``+72h`` / ``+3d`` after the due date."""
    match = _OFFSET.match(text or "")
    cutoff = due + _period(match.group(1), match.group(2), text) if match else parse_time(text)
    if cutoff < due:
        raise PolicyError(f"--late-cutoff {text!r} is before the due date")
    return cutoff


# --------------------------------------------------------------------------- extensions

@dataclass(frozen=True)
class Extension:
    """One student's extension: a new due date, or extra time."""
    due: datetime | None = None
    extra: timedelta = timedelta(0)

    def moved(self, due: datetime) -> datetime:
        return self.due if self.due is not None else due + self.extra


@dataclass
class Extensions:
    """Extensions by email, SID and name (lower-cased)."""
    by_email: dict[str, Extension] = field(default_factory=dict)
    by_sid: dict[str, Extension] = field(default_factory=dict)
    by_name: dict[str, Extension] = field(default_factory=dict)
    source: str = ""

    def __len__(self) -> int:
        return len({id(e) for d in (self.by_email, self.by_sid, self.by_name) for e in d.values()})

    def for_person(self, person: "Member") -> Extension | None:
        for table, key in ((self.by_email, person.email), (self.by_sid, person.sid), (self.by_name, person.name)):
            key = (key or "").strip().lower()
            if key and key in table:
                return table[key]
        return None

    @classmethod
    def read(cls, path: str | Path) -> "Extensions":
        """An extensions CSV (see the module docstring); raises :class:`PolicyError`."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(f"--extensions {path}: cannot be read ({exc})") from None
        reader = csv.DictReader(text.splitlines())
        columns = {c.strip().lower() for c in reader.fieldnames or []}
        if not columns & {"email", "sid", "student", "name"}:
            raise PolicyError(f"--extensions {path}: needs a column email, sid or student")
        if not columns & {"due", "extra_hours", "extra_days"}:
            raise PolicyError(f"--extensions {path}: needs a column due, extra_hours or extra_days")
        found = cls(source=str(path))
        for number, raw in enumerate(reader, start=2):
            row = {str(k).strip().lower(): (v or "").strip() for k, v in raw.items() if k is not None}
            extension = _extension(row, f"--extensions {path}, line {number}")
            keys = [(found.by_email, row.get("email")), (found.by_sid, row.get("sid")),
                    (found.by_name, row.get("student") or row.get("name"))]
            if not any(key for _, key in keys):
                raise PolicyError(f"--extensions {path}, line {number}: names no student")
            for table, key in keys:
                if key:
                    table[key.lower()] = extension
        return found


def _extension(row: dict[str, str], where: str) -> Extension:
    try:
        if row.get("due"):
            return Extension(due=parse_time(row["due"]))
        hours = Decimal(row.get("extra_hours") or 0) + 24 * Decimal(row.get("extra_days") or 0)
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from None
    except InvalidOperation:
        raise PolicyError(f"{where}: extra_hours / extra_days must be numbers") from None
    if hours <= 0:
        raise PolicyError(f"{where}: gives no due date and no extra time")
    return Extension(extra=timedelta(hours=float(hours)))


# --------------------------------------------------------------------------- the policy

@dataclass(frozen=True)
class LatePolicy:
    due: datetime
    penalty: Penalty | None = None
    cutoff: datetime | None = None
    extensions: Extensions = field(default_factory=Extensions)

    def describe(self) -> str:
        parts = [f"due {self.due.isoformat()}"]
        parts.append(f"{self.penalty.percent.normalize():f} % of the points possible per started "
                     f"{_span_text(self.penalty.period)} late" if self.penalty else "no penalty")
        if self.cutoff is not None:
            parts.append(f"zero after {self.cutoff.isoformat()}")
        if len(self.extensions):
            parts.append(f"{len(self.extensions)} extension(s) from {Path(self.extensions.source).name}")
        return "; ".join(parts)


def _span_text(span: timedelta) -> str:
    for name, unit in (("week", PERIODS["week"]), ("day", PERIODS["day"]), ("hour", PERIODS["hour"])):
        if span == unit:
            return name
    hours = span / PERIODS["hour"]
    return f"{hours:g} hours"


@dataclass(frozen=True)
class SubmissionTime:
    """When a submission was made, and where that time comes from."""
    when: datetime | None
    source: str                   # "metadata" | "files" | "none"

    def describe(self) -> str:
        return {"metadata": "Gradescope's export metadata (created_at)",
                "files": "the newest file time in the submission (no metadata)",
                "none": "unknown"}[self.source]


def submission_time(entry: "Entry") -> SubmissionTime:
    """The metadata's ``created_at``, else the newest modification time in the submission."""
    if entry.created_at:
        try:
            return SubmissionTime(parse_time(entry.created_at), "metadata")
        except PolicyError:
            pass
    newest = _newest_mtime(Path(entry.path))
    if newest is None:
        return SubmissionTime(None, "none")
    return SubmissionTime(datetime.fromtimestamp(newest, tz=timezone.utc), "files")


def _newest_mtime(path: Path, limit: int = 10_000) -> float | None:
    """The newest ``st_mtime`` of ``path`` and, for a folder, everything under it (lstat:
    links are not followed; at most ``limit`` entries)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    newest, seen = info.st_mtime, 0
    if stat.S_ISDIR(info.st_mode):
        for root, dirs, files in os.walk(path, followlinks=False):
            for name in dirs + files:
                seen += 1
                if seen > limit:
                    return newest
                try:
                    newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
                except OSError:
                    continue
    return newest


@dataclass(frozen=True)
class LateOutcome:
    """The late policy applied to one person's grade."""
    submitted: SubmissionTime
    due: datetime                 # this person's (an extension moves it)
    cutoff: datetime | None
    extended: bool
    late_by: timedelta            # zero when on time
    percent: Decimal              # of the points possible deducted
    cut_off: bool                 # after the cut-off: zero
    raw: Decimal
    final: Decimal

    @property
    def late(self) -> bool:
        return self.late_by > timedelta(0)

    @property
    def late_hours(self) -> Decimal:
        return Decimal(self.late_by.total_seconds() / 3600).quantize(Decimal("0.01"))

    def describe(self) -> str:
        if self.submitted.when is None:
            return "submission time unknown: no penalty"
        if not self.late:
            return "on time" + (" (extension)" if self.extended else "")
        if self.cut_off:
            return "after the cut-off: zero"
        if not self.percent:
            return "late: no penalty"
        return f"late: {self.percent.normalize():f} % of the points possible deducted"


def apply(policy: LatePolicy, person: "Member", submitted: SubmissionTime, raw: Decimal,
          max_total: Decimal) -> LateOutcome:
    """``policy`` applied to ``person``'s ``raw`` total (out of ``max_total``)."""
    extension = policy.extensions.for_person(person)
    due = extension.moved(policy.due) if extension else policy.due
    cutoff = policy.cutoff + (due - policy.due) if policy.cutoff is not None else None
    if submitted.when is None:
        return LateOutcome(submitted, due, cutoff, extension is not None, timedelta(0), Decimal(0), False, raw, raw)
    late_by = max(timedelta(0), submitted.when - due)
    cut_off = cutoff is not None and submitted.when > cutoff
    percent = Decimal(100) if cut_off else (policy.penalty.percent_for(late_by) if policy.penalty else Decimal(0))
    final = max(Decimal(0), raw - (max_total * percent / 100)).quantize(SCORE_UNIT)
    return LateOutcome(submitted, due, cutoff, extension is not None, late_by, percent, cut_off, raw, exact(final))
