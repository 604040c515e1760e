"""The class as the course staff's outputs see it, built once after a batch.

* :class:`SubmissionView`: one graded submission (a gradebook :class:`~autograder.batching.runner.Row`)
  with what its ``results.json`` says besides the scores (each exercise's outcome, reach-ins
  into the kit) and when it was submitted.
* :class:`Line`: one person's gradebook line: a group submission gives each member a line
  with the group's grade, their own email and id, and their own late outcome (extensions are
  per person).
* :class:`RunFacts`: what the batch was (exercises, build, isolation, secret, jobs or Dask,
  times); :class:`ClassView`: all of it, what every output renders.

**Exact scores.** Every score the kit writes is a multiple of ``10**-4``
(:data:`autograder.results.SCORE_DECIMALS`): each test's share of its exercise comes from
:func:`autograder.results.split_total`, so the shares add up exactly to the exercise's
total. :func:`exact` is the decimal that stored float stands for (``16.6667``, never the
``16.667`` of six significant digits, never a float sum's ``0.30000000000000004``); sums are
made in :class:`~decimal.Decimal`, so a CSV's per-test cells add up to its exercise cell and
its exercise cells to its total, digit for digit. :func:`decimal_text` writes one without
trailing zeros or an exponent (``20``, ``16.6667``, ``0.0001``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from autograder import contract, results

if TYPE_CHECKING:
    from autograder.batching.discovery import Entry, Member
    from autograder.batching.runner import Row
    from autograder.staff.late import LateOutcome, SubmissionTime
    from autograder.staff.options import Options

SCORE_UNIT = Decimal(1).scaleb(-results.SCORE_DECIMALS)        # 0.0001
GRADED_STATUS = "ok"            # a Row whose grader finished (the others: no files, timeout, error)


# --------------------------------------------------------------------------- exact scores

def exact(value: float | int | Decimal) -> Decimal:
    """The score ``value`` stands for, as a decimal multiple of :data:`SCORE_UNIT`
    (``exact(16.6667) == Decimal("16.6667")``; a float sum's noise is rounded away)."""
    number = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    return number.quantize(SCORE_UNIT, rounding=ROUND_HALF_EVEN)


def decimal_text(value: float | int | Decimal) -> str:
    """A score for a CSV cell or a page: exact, no trailing zeros, no exponent (``20``,
    ``16.6667``, ``0.0001``)."""
    text = format(exact(value).normalize(), "f")
    return "0" if text in ("-0", "") else text


def status_text(row: "Row") -> str:
    """A row's status as a word (``ok``, ``no files``, ``timeout``, ``error``), whether the
    runner keeps it as a string or an enum."""
    status = row.status
    return str(getattr(status, "value", status))


def is_graded(row: "Row") -> bool:
    """Whether the grader finished with this submission (its scores are the kit's verdict)."""
    return status_text(row) == GRADED_STATUS


# --------------------------------------------------------------------------- the class

@dataclass
class SubmissionView:
    """One submission with what the staff outputs need besides its row."""
    row: "Row"
    outcomes: dict[str, results.ExerciseOutcome] = field(default_factory=dict)   # by exercise id
    reach_ins: dict[str, list[list]] = field(default_factory=dict)               # exercise -> records
    submitted: "SubmissionTime | None" = None

    @property
    def entry(self) -> "Entry":
        return self.row.entry

    @property
    def graded(self) -> bool:
        return is_graded(self.row)

    @property
    def total(self) -> Decimal:
        """The raw total, exactly: the sum of the exact exercise scores."""
        return sum((exact(self.row.scores.get(ex, 0.0)) for ex in self.row.scores), Decimal(0))

    def score(self, exercise: str) -> Decimal:
        return exact(self.row.scores.get(exercise, 0.0))

    def exercise_graded(self, exercise: str) -> bool:
        """Whether this exercise's file ran and its tests judged it (missing, syntax errors,
        refused files do not count towards a test's pass rate)."""
        outcome = self.outcomes.get(exercise)
        if outcome is None:                       # an older results.json: its tests decide
            return any(results.exercise_of_result(t) == exercise for t in self.row.tests)
        return outcome.status == results.ExerciseStatus.GRADED


@dataclass
class Line:
    """One person's gradebook line (a group submission: one per member)."""
    person: "Member"
    view: SubmissionView
    late: "LateOutcome | None" = None

    @property
    def raw(self) -> Decimal:
        return self.view.total

    @property
    def final(self) -> Decimal:
        """The grade that goes to the LMS: the raw total, less any late penalty."""
        return self.late.final if self.late is not None else self.raw

    @property
    def group(self) -> str:
        """The group's display name when the submission has several members, else ""."""
        return self.view.entry.student if len(self.view.entry.people()) > 1 else ""


@dataclass
class SecretFacts:
    """Which secret the hidden inputs came from (never the secret itself)."""
    origin: str                   # "build" | "checkout" | "fallback" | "override"
    sha256_prefix: str            # as BUILD_INFO.json's seed_secret_sha256
    pinned: bool | None           # a build's `--seed-secret`; None: not recorded (older build, checkout)

    def describe(self) -> str:
        where = {"build": "the build's secret (BUILD_INFO.json)",
                 "checkout": "this checkout's own secret (autograder/SEED_SECRET, made on first use)",
                 "override": "a secret set by the caller",
                 "fallback": "the PUBLIC fallback: no secret could be read"}[self.origin]
        pin = {True: "pinned (build --seed-secret): the same hidden inputs after a rebuild",
               False: "not pinned: a rebuild draws other hidden inputs",
               None: "the same for every regrade with this kit"}[self.pinned]
        return f"{where}, sha256 {self.sha256_prefix}…; {pin}"


@dataclass
class RunFacts:
    """What the batch was, for the report's "run" section."""
    exercises: tuple[contract.Exercise, ...]
    build_id: str = ""
    kit_version: str = ""
    secret: SecretFacts | None = None
    jobs: int = 1
    scheduler: str = ""           # a Dask scheduler's address, "" for local jobs
    warm: bool = True
    elapsed: float = 0.0          # seconds this run spent grading
    graded_now: int = 0           # submissions graded by this run (the rest were kept)
    kept: int = 0
    finished: datetime | None = None
    gradescope: bool = False
    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    @property
    def max_total(self) -> Decimal:
        return sum((exact(ex.points) for ex in self.exercises), Decimal(0))

    @property
    def rate_per_minute(self) -> float:
        """Submissions graded per minute by this run (kept results do not count)."""
        return self.graded_now / self.elapsed * 60 if self.elapsed > 0 and self.graded_now else 0.0


@dataclass
class ClassView:
    """Everything the staff outputs render."""
    submissions: list[SubmissionView]
    lines: list[Line]
    facts: RunFacts
    options: "Options"
    out_dir: Path

    @property
    def exercises(self) -> tuple[contract.Exercise, ...]:
        return self.facts.exercises

    @property
    def graded(self) -> list[SubmissionView]:
        return [s for s in self.submissions if s.graded]

    def isolation_levels(self) -> Counter:
        return Counter(s.row.isolation for s in self.submissions if s.row.isolation)


def load_submissions(rows: Sequence["Row"], out_dir: Path) -> list[SubmissionView]:
    """Each row with its ``results/<key>/results.json`` read back (outcomes, reach-ins)."""
    views = []
    for row in rows:
        data = results.load(Path(out_dir) / "results" / row.entry.key / "results.json") or {}
        views.append(SubmissionView(row=row, outcomes=results.outcomes_from_json(data),
                                    reach_ins=results.reach_ins_from_json(data)))
    return views
