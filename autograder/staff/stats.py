"""The class's statistics: per-test pass rates and how well each test separates strong from
weak submissions, tests to look at, misconceptions, and score histograms' bins.

**Which submissions count for a test**: the graded ones (the grader finished) whose exercise
file ran (not missing, refused or a syntax error: those say nothing about the test).

**Separation** (:func:`point_biserial`): the point-biserial correlation between passing the
test (1/0) and the submission's total over the *other* tests (its raw total less this test's
score: the corrected item-total correlation, so that a heavy test does not correlate with
itself). Equal to Pearson's r of the two; between -1 and 1; near 0 or negative: passing this
test says little about, or runs against, how a submission does elsewhere (a test to read
again). Undefined (``None``, with the reason) when every counted submission passed, or every
one failed, or the other tests' totals do not vary.

**Look at this test**: failed by at least :data:`LOOK_SHARE` of the counted submissions, when
at least :data:`LOOK_MIN` were counted: a bad test, or a topic the lecture missed.

**Misconceptions**: each failed test's structured likely cause (``extra_data.cause``, written
by the grading plugin; never parsed from the output), grouped by exercise and cause, with the
submissions (and so the students) that have it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Sequence

from autograder import results
from autograder.staff.model import SubmissionView

LOOK_SHARE = 0.9
LOOK_MIN = 5


@dataclass
class ItemStat:
    """One test (an "item") over the class."""
    name: str
    exercise: str
    number: str = ""
    counted: int = 0                  # submissions whose exercise was graded
    passed: int = 0
    separation: float | None = None   # point-biserial r (see the module docstring)
    why_undefined: str = ""
    failed_by: list[str] = field(default_factory=list)     # students (display names)

    @property
    def rate(self) -> float:
        return self.passed / self.counted if self.counted else 0.0

    @property
    def look(self) -> bool:
        return self.counted >= LOOK_MIN and (self.counted - self.passed) >= LOOK_SHARE * self.counted


@dataclass
class Misconception:
    """A likely cause named by failed tests, and who has it."""
    exercise: str
    cause: str
    students: list[str] = field(default_factory=list)       # submissions' display names, class order
    tests: list[str] = field(default_factory=list)           # the tests that named it
    keys: list[str] = field(default_factory=list)            # the submissions' keys (results/<key>/)

    @property
    def count(self) -> int:
        return len(self.students)


def point_biserial(passed: Sequence[bool], others: Sequence[float]) -> tuple[float | None, str]:
    """Pearson's r between ``passed`` (1/0) and ``others``; ``(None, reason)`` when undefined."""
    n = len(passed)
    n1 = sum(1 for p in passed if p)
    if n == 0:
        return None, "no submission counted"
    if n1 == n:
        return None, "every counted submission passed"
    if n1 == 0:
        return None, "every counted submission failed"
    mean = sum(others) / n
    spread = math.sqrt(sum((y - mean) ** 2 for y in others) / n)       # population sd
    if spread <= 1e-12:
        return None, "the other tests' totals do not vary"
    mean1 = sum(y for p, y in zip(passed, others) if p) / n1
    mean0 = sum(y for p, y in zip(passed, others) if not p) / (n - n1)
    share = n1 / n
    return (mean1 - mean0) / spread * math.sqrt(share * (1 - share)), ""


def item_stats(submissions: Sequence[SubmissionView]) -> list[ItemStat]:
    """Every test over the counted submissions: lowest pass rate first (then the suite's order)."""
    stats: dict[str, ItemStat] = {}
    samples: dict[str, list[tuple[bool, float]]] = {}
    for view in submissions:
        if not view.graded:
            continue
        total = float(view.total)
        for test in view.row.tests:
            exercise = results.exercise_of_result(test)
            if not view.exercise_graded(exercise):
                continue
            name = results.one_line(test.get("name", "?"), 300)
            stat = stats.setdefault(name, ItemStat(name, exercise, str(test.get("number", ""))))
            ok = results.result_passed(test)
            stat.counted += 1
            stat.passed += ok
            if not ok:
                stat.failed_by.append(view.entry.student)
            samples.setdefault(name, []).append((ok, total - results.result_score(test)))
    order = {name: i for i, name in enumerate(stats)}
    for name, stat in stats.items():
        stat.separation, stat.why_undefined = point_biserial([p for p, _ in samples[name]],
                                                             [y for _, y in samples[name]])
    return sorted(stats.values(), key=lambda s: (s.rate, order[s.name]))


def misconceptions(submissions: Sequence[SubmissionView]) -> list[Misconception]:
    """The likely causes of failed tests, most common first; each submission counted once per cause."""
    found: dict[tuple[str, str], Misconception] = {}
    counted: set[tuple[str, str, int]] = set()
    for position, view in enumerate(submissions):
        for test in view.row.tests:
            if results.result_passed(test):
                continue
            cause = results.cause_of_result(test)
            if not cause:
                continue
            exercise = results.exercise_of_result(test)
            item = found.setdefault((exercise, cause), Misconception(exercise, cause))
            if (exercise, cause, position) not in counted:
                counted.add((exercise, cause, position))
                item.keys.append(view.entry.key)
                item.students.append(view.entry.student)
            name = results.one_line(test.get("name", "?"), 300)
            if name not in item.tests:
                item.tests.append(name)
    return sorted(found.values(), key=lambda m: (-m.count, m.exercise, m.cause))


# --------------------------------------------------------------------------- distributions

@dataclass(frozen=True)
class Summary:
    """Mean, median, spread of some scores (floats for display)."""
    count: int
    mean: float
    median: float
    low: float
    high: float
    full: int                         # at the maximum
    zero: int


def summarise(values: Sequence[Decimal], maximum: Decimal) -> Summary | None:
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return Summary(n, float(sum(ordered) / n), float(middle), float(ordered[0]), float(ordered[-1]),
                   sum(1 for v in ordered if v >= maximum), sum(1 for v in ordered if v == 0))


NICE_WIDTHS = (0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50)
POINT_BINS_UP_TO = 100          # a range this wide or narrower: one bin per point


def bin_edges(values: Sequence[float], maximum: float) -> list[float]:
    """Histogram bin edges that show the spread: over the observed range (not 0 to the
    maximum), one bin per point when that range is at most :data:`POINT_BINS_UP_TO` points,
    else the Freedman–Diaconis width (2·IQR·n^(-1/3)) rounded up to a round number (at least
    one point)."""
    if not values:
        return [0.0, max(1.0, float(maximum))]
    low, high = math.floor(min(values)), math.ceil(max(values))
    if high - low <= POINT_BINS_UP_TO:
        width = 1.0
    else:
        ordered = sorted(values)
        iqr = _quantile(ordered, 0.75) - _quantile(ordered, 0.25)
        raw = 2 * iqr * len(ordered) ** (-1 / 3) if iqr > 0 else (high - low) / 10
        width = next((w for w in NICE_WIDTHS if w >= max(1.0, raw)), NICE_WIDTHS[-1])
        low = math.floor(low / width) * width
    edges = [float(low)]
    while edges[-1] <= high:                       # the last bin holds the maximum observed
        edges.append(edges[-1] + width)
    return edges


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = (len(ordered) - 1) * q
    below, above = math.floor(position), math.ceil(position)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
