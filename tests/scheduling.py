"""How ``make test`` shares the kit's tests between its two processes: units of work, handed
out longest first, from the durations of an earlier run.

A *unit* is a test file (its module fixtures are built once, in one process), or a single test
of a file in :data:`SPREAD` (independent cases whose gradings every process shares through
``gradings.py``). xdist hands units out in collection order, each to whichever process is
free; :func:`longest_first` orders them by how long they took in the run recorded in
``durations.json``, the longest first (LPT scheduling): the long files start early, side by
side, and the run ends on short units, so no file runs alone at the end. A file the record
does not know yet (a new one) goes first: it may be long.

The record is data, not a promise: rewrite it after the suite's shape changes, with the
command the Makefile runs plus ``--record-durations``::

    .venv/bin/python -m pytest -q -n 2 --dist loadgroup --record-durations tests/durations.json

It keeps each file's seconds (setup, call and teardown of all its tests, wall time in its
process) and, for :data:`SPREAD` files, the tests that took :data:`OUTLIER_S` or more on their
own; the others of such a file share what is left of its time.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
# Files whose tests are independent of each other (one case each, gradings shared through
# gradings.py): spread test by test over the processes. Every other file runs in one process.
SPREAD = frozenset({
    "test_suites_corpus.py", "test_seed_sweep.py", "test_student_corpus.py", "test_hostile.py",
    "test_held_out_corpus.py", "test_contract_corpus.py", "test_banned_ops.py", "test_solutions.py",
    "test_reference_attention.py", "test_reference_multihead.py", "test_wire.py"})
OUTLIER_S = 5.0               # a spread test this slow is recorded on its own
UNKNOWN = math.inf            # a file without a record: first


def file_of(nodeid: str) -> str:
    """``tests/test_x.py::test_y[z]`` -> ``test_x.py``."""
    return Path(nodeid.split("::", 1)[0]).name


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file's path, or itself for a file in :data:`SPREAD`."""
    return nodeid if file_of(nodeid) in SPREAD else nodeid.split("::", 1)[0]


@dataclass(frozen=True)
class Durations:
    """Seconds per file, and per slow test of a :data:`SPREAD` file, from one recorded run."""
    files: dict[str, float] = field(default_factory=dict)
    outliers: dict[str, float] = field(default_factory=dict)      # node id -> seconds

    @classmethod
    def load(cls, path: Path = DURATIONS) -> "Durations":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()                       # no record: every unit "unknown", order kept
        return cls(dict(data.get("files", {})), dict(data.get("outliers", {})))

    def unit_seconds(self, nodeids: list[str]) -> dict[str, float]:
        """Each unit of ``nodeids`` (the tests collected now) -> its expected seconds."""
        per_file: dict[str, list[str]] = defaultdict(list)
        for nodeid in nodeids:
            per_file[file_of(nodeid)].append(nodeid)
        seconds: dict[str, float] = {}
        for name, ids in per_file.items():
            total = self.files.get(name, UNKNOWN)
            if name not in SPREAD:
                seconds[unit_of(ids[0])] = total
                continue
            slow = {i: self.outliers[i] for i in ids if i in self.outliers}
            rest = [i for i in ids if i not in slow]
            share = max(total - sum(slow.values()), 0.0) / len(rest) if rest else 0.0
            seconds.update(slow)
            seconds.update(dict.fromkeys(rest, share))
        return seconds


def longest_first(nodeids: list[str], durations: Durations) -> list[str]:
    """``nodeids`` reordered unit by unit, the longest unit first (a unit's tests keep their
    order; units of equal length keep theirs)."""
    seconds = durations.unit_seconds(nodeids)
    return sorted(nodeids, key=lambda nodeid: -seconds[unit_of(nodeid)])


class Recorder:
    """The ``--record-durations FILE`` plugin: sums each test's report durations (setup, call,
    teardown) and, in the process that sees every report (xdist's controller, or the only
    one), writes them per file, with the spread files' outliers."""

    def __init__(self, path: Path):
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] += report.duration

    def durations(self) -> Durations:
        files: dict[str, float] = defaultdict(float)
        outliers = {}
        for nodeid, seconds in self.seconds.items():
            files[file_of(nodeid)] += seconds
            if file_of(nodeid) in SPREAD and seconds >= OUTLIER_S:
                outliers[nodeid] = round(seconds, 1)
        return Durations({name: round(s, 1) for name, s in sorted(files.items())}, dict(sorted(outliers.items())))

    def write(self) -> None:
        record = self.durations()
        self.path.write_text(json.dumps({"files": record.files, "outliers": record.outliers}, indent=1)
                             + "\n", encoding="utf-8")
