"""Gradescope ``results.json``: build the object, bound every string, write it atomically.

The file is always written by the grading process (never by the worker, never from stdout):
once with a zero score before any student code runs, then once with the real results.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping

from autograder.jsontypes import JSONObject
from autograder import textsafe
from autograder.vocabulary import Word

TEST_OUTPUT_LIMIT = 8_000          # per test; Gradescope itself cuts at 100,000
CAUSE_LIMIT = 100                  # a cause id in a test's extra_data
CAUSES_LIMIT = 10                  # cause ids per test (several the test cannot tell apart)
SUMMARY_LIMIT = 20_000
SCHEMA_PATH = Path(__file__).parent / "schemas" / "gradescope_results.schema.json"
SCORE_DECIMALS = 4                 # every score the kit writes is a multiple of 10**-4

class ExerciseStatus(Word):
    """What became of one exercise (results.json ``extra_data.exercises[].status``): the one
    vocabulary from the engine to ``check``, ``batch`` and the gradebook."""
    GRADED = "graded"
    MISSING = "missing"
    SYNTAX_ERROR = "syntax_error"
    IMPORT_ERROR = "import_error"
    CRASHED = "crashed"
    OUT_OF_TIME = "out_of_time"
    REFUSED = "refused"
    NOT_RUN = "not_run"            # the sandbox could not start: the machine's problem, not the file's

    @property
    def label(self) -> str:
        """The summary's short label ("syntax error")."""
        return _STATUS_WORDS[self][0]

    @property
    def note(self) -> str:
        """The gradebook's wording ("could not be imported")."""
        return _STATUS_WORDS[self][1]

    @property
    def file_ran(self) -> bool:
        """Whether the student's file was imported at all."""
        return self not in (ExerciseStatus.MISSING, ExerciseStatus.SYNTAX_ERROR,
                            ExerciseStatus.IMPORT_ERROR, ExerciseStatus.REFUSED, ExerciseStatus.NOT_RUN)

    @classmethod
    def read(cls, value: Any) -> "ExerciseStatus":
        """A status from results.json, tolerantly (an unknown word reads as GRADED)."""
        try:
            return cls(value)
        except ValueError:
            return cls.GRADED


_STATUS_WORDS: dict[ExerciseStatus, tuple[str, str]] = {
    ExerciseStatus.GRADED: ("graded", "graded"),
    ExerciseStatus.MISSING: ("missing", "not found"), ExerciseStatus.REFUSED: ("refused", "refused"),
    ExerciseStatus.SYNTAX_ERROR: ("syntax error", "syntax error"),
    ExerciseStatus.IMPORT_ERROR: ("import error", "could not be imported"),
    ExerciseStatus.CRASHED: ("crashed", "crashed"), ExerciseStatus.OUT_OF_TIME: ("out of time", "out of time"),
    ExerciseStatus.NOT_RUN: ("not run", "not graded: the autograder could not run it"),
}


@dataclass
class ExerciseOutcome:
    """One exercise's fate, as data: produced by the engine, read by every front end."""
    exercise: str                  # "ex1"
    status: ExerciseStatus
    message: str = ""              # for the student; "" when graded normally
    score: float = 0.0
    max_score: float = 0.0
    seconds: float = 0.0
    tests_total: int = 0
    tests_passed: int = 0
    origin: str = ""               # where in the submission the file was found ("" if not)

    def __post_init__(self) -> None:
        self.status = ExerciseStatus(self.status)          # the word ("graded") is the member

    def to_json(self) -> JSONObject:
        entry = asdict(self)
        entry.update(status=self.status.value, score=round(self.score, SCORE_DECIMALS), max_score=round(self.max_score, SCORE_DECIMALS),
                     seconds=round(self.seconds, 3), message=clip(self.message, TEST_OUTPUT_LIMIT),
                     origin=one_line(self.origin, 1000))
        return entry

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ExerciseOutcome":
        """Tolerant reading (a results.json written by another version or damaged)."""
        kinds = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for name in kinds:
            if name not in data:
                continue
            value = data[name]
            if name in ("score", "max_score", "seconds"):
                value = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
            elif name in ("tests_total", "tests_passed"):
                value = int(value) if isinstance(value, int) and not isinstance(value, bool) else 0
            elif name == "status":
                value = ExerciseStatus.read(value)
            else:
                value = str(value)
            values[name] = value
        values.setdefault("exercise", "?")
        values.setdefault("status", ExerciseStatus.GRADED)
        return cls(**values)


@dataclass
class TestResult:
    exercise: str                  # "ex1"
    title: str                     # "softmax rows sum to one"
    max_score: float
    score: float = 0.0
    passed: bool = False
    output: str = ""
    visibility: str = "after_published"
    number: str = ""
    cause: tuple[str, ...] = ()    # the likely mistake a failure names: Cause ids (several: a test
                                   # cannot tell them apart), extra_data's "cause"
    seconds: float = 0.0           # wall time of the test (set-up, call, tear-down): for course
                                   # staff (`audit`), never written to results.json

    @property
    def name(self) -> str:
        return f"{self.exercise} · {self.title}"

    def to_json(self) -> JSONObject:
        entry = {"name": self.name, "score": round(self.score, 4), "max_score": round(self.max_score, 4),
                 "status": "passed" if self.passed else "failed",
                 "output": clip(self.output, TEST_OUTPUT_LIMIT), "visibility": self.visibility,
                 "tags": [self.exercise]}
        if self.number:
            entry["number"] = self.number
        if self.cause:
            entry["extra_data"] = {"cause": [clip(c, CAUSE_LIMIT) for c in self.cause[:CAUSES_LIMIT]]}
        return entry


@dataclass
class Results:
    tests: list[TestResult] = field(default_factory=list)
    output: str = ""
    execution_time: float = 0.0
    exercises: list[ExerciseOutcome] = field(default_factory=list)
    isolation: str = ""            # the isolation level that ran ("namespaces", "user", "process", …)
    isolation_description: str = ""
    complete: bool = True          # False while grading is still under way (partial file)
    # exercise -> [event, file, line]: a student file reached into the kit (sandbox/reachin.py);
    # for course staff (extra_data, the log), never in a student-facing output
    reach_ins: dict[str, list[list]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 4)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 4)

    def by_exercise(self) -> dict[str, tuple[float, float]]:
        return _totals((t.exercise, t.score, t.max_score) for t in self.tests)

    def outcome(self, exercise: str) -> "ExerciseOutcome | None":
        return next((o for o in self.exercises if o.exercise == exercise), None)

    def to_json(self) -> JSONObject:
        extra = {"exercises": [o.to_json() for o in self.exercises], "complete": self.complete}
        if self.isolation:
            extra["isolation"] = self.isolation
            extra["isolation_description"] = self.isolation_description
        if self.reach_ins:
            extra["reach_ins"] = {ex: [list(r) for r in records] for ex, records in self.reach_ins.items()}
        return {"score": self.score, "execution_time": round(self.execution_time, 3),
                "output": clip(self.output, SUMMARY_LIMIT), "output_format": "text",
                "visibility": "visible", "stdout_visibility": "hidden",
                "tests": [t.to_json() for t in self.tests], "extra_data": extra}


def outcomes_from_json(data: Mapping[str, Any]) -> dict[str, ExerciseOutcome]:
    """``{exercise: ExerciseOutcome}`` from a results.json read back ({} when it has none)."""
    extra = data.get("extra_data") if isinstance(data, Mapping) else None
    entries = extra.get("exercises") if isinstance(extra, Mapping) else None
    out: dict[str, ExerciseOutcome] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping):
            outcome = ExerciseOutcome.from_json(entry)
            out[outcome.exercise] = outcome
    return out


# --------------------------------------------------------------------------- exact totals

def split_total(total: float, weights: list[float]) -> list[float]:
    """``total`` shared in proportion to ``weights``, each part a multiple of 10**-4, the parts
    adding up exactly to ``total`` (rounded to 4 decimals): largest-remainder apportionment.

    ``split_total(20, [1, 1, 1])`` -> ``[6.6667, 6.6667, 6.6666]``. Weights of 0 get 0; when
    every weight is 0 the parts are 0.
    """
    unit = 10 ** SCORE_DECIMALS
    units = round(Fraction(total) * unit)
    exact = [Fraction(w) for w in weights]
    whole = sum(exact)
    if whole <= 0 or units <= 0:
        return [0.0] * len(weights)
    shares = [units * w / whole for w in exact]
    parts = [int(s) for s in shares]                 # floor (shares are >= 0)
    left = units - sum(parts)
    by_remainder = sorted(range(len(shares)), key=lambda i: (-(shares[i] - parts[i]), i))
    for i in by_remainder[:left]:
        parts[i] += 1
    return [p / unit for p in parts]


# --------------------------------------------------------------------------- safe text
# The boundary functions live in textsafe.py; these names stay for the front ends.

one_line = textsafe.one_line


def block(text: object) -> str:
    """Multi-line text from student code (an exception message): line breaks normalised to
    ``\\n``, every other control character made visible (:func:`textsafe.text`)."""
    return textsafe.text(text)


def indented(text: object, prefix: str = "    ", more: str = "    | ") -> str:
    """``block(text)`` under a summary line: its first line after ``prefix``, every further
    line after ``more`` (a quote bar), so that no line of it can pass for one of the grader's
    own lines ("ALL TESTS PASSED", "ex1 …: 20 / 20")."""
    lines = block(text).split("\n")
    return "\n".join((prefix if i == 0 else more) + line for i, line in enumerate(lines))


def exercise_of_result(test: Mapping[str, Any]) -> str:
    """The exercise of a test entry in a results.json: its first tag (the kit writes
    ``["ex1"]``), else the first word of its name (``"ex1 · …"``)."""
    tags = test.get("tags") or []
    if tags and isinstance(tags[0], str):
        return tags[0]
    return str(test.get("name", "")).split(" ", 1)[0]


def load(path: str | Path) -> dict | None:
    """A results.json read back (None when it is missing, unreadable or not an object)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def result_passed(test: Mapping[str, Any]) -> bool:
    """Whether a test entry of a results.json read back passed."""
    return test.get("status") == "passed"


def result_score(test: Mapping[str, Any]) -> float:
    """A test entry's score (0 when absent or not a number)."""
    value = test.get("score", 0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def cause_of_result(test: Mapping[str, Any]) -> str:
    """The likely mistake a failed test entry names, as the student read it ("A\\n  or: B" for
    causes the test cannot tell apart; "" when none): from its ``extra_data.cause``, the cause
    ids the grading plugin wrote, never parsed from the output, which student code can print into."""
    from autograder.diagnosis.causes import text_of_ids

    extra = test.get("extra_data")
    named = extra.get("cause") if isinstance(extra, Mapping) else None
    if not isinstance(named, list) or not all(isinstance(c, str) for c in named):
        return ""
    return text_of_ids(named)


def reach_ins_from_json(data: Mapping[str, Any]) -> dict[str, list[list]]:
    """``extra_data.reach_ins`` of a results.json read back: ``{exercise: [[event, file, line], …]}``."""
    extra = data.get("extra_data") if isinstance(data, Mapping) else None
    found = extra.get("reach_ins") if isinstance(extra, Mapping) else None
    if not isinstance(found, Mapping):
        return {}
    return {str(ex): [list(r) for r in records if isinstance(r, (list, tuple))]
            for ex, records in found.items() if isinstance(records, list)}


def totals_by_exercise(tests: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """``{exercise: (score, max_score)}`` over the test entries of a results.json read back."""
    return _totals((exercise_of_result(t), float(t.get("score", 0)), float(t.get("max_score", 0)))
                   for t in tests)


def _totals(rows: Iterable[tuple[str, float, float]]) -> dict[str, tuple[float, float]]:
    totals: dict[str, list[float]] = {}
    for exercise, score, max_score in rows:
        acc = totals.setdefault(exercise, [0.0, 0.0])
        acc[0] += score
        acc[1] += max_score
    return {ex: (round(s, SCORE_DECIMALS), round(m, SCORE_DECIMALS)) for ex, (s, m) in totals.items()}


def clip(text: str, limit: int) -> str:
    """``text`` made safe (:func:`textsafe.text`) and cut to at most ``limit`` UTF-8 bytes,
    saying how many were cut."""
    text = textsafe.text(text)
    size = textsafe.utf8_len(text)
    if size <= limit:
        return text
    note = f"\n… [{size - limit} more bytes cut]"
    return textsafe.cap(text, limit - textsafe.utf8_len(note), marker="") + note


STARTED = ("Grading started but did not finish. If this message stays, the autograder itself "
           "failed before it could write your results: please tell the course staff.")


def placeholder(reason: str = STARTED) -> JSONObject:
    """The zero-score file written before any student code runs."""
    return {"score": 0.0, "execution_time": 0.0, "output": clip(reason, SUMMARY_LIMIT),
            "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden",
            "tests": []}


def write_atomic(path: str | Path, data: JSONObject) -> None:
    """Write JSON to a temp file in the same folder, fsync, then rename over ``path``.

    Every string is made valid UTF-8 first (:func:`textsafe.scrub`) and a results object is
    made to fit :data:`MAX_RESULTS_BYTES` (:func:`fit`), whatever the submission put in it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = fitted(data)[1] if isinstance(data.get("tests"), list) else encode(textsafe.scrub(data))
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- the whole file

MAX_RESULTS_BYTES = 1_000_000      # the whole results.json, whatever the submission
RESULTS_BUDGET = 950_000           # what fit() aims at (a margin for rounding)
VERDICT_LINE_BYTES = 500           # each test keeps at least its first line, up to this
SHORTENED = "\n… [shortened: the results file has a size limit]"


def encode(data: JSONObject) -> bytes:
    """The bytes the kit writes for ``data`` (indented, non-ASCII kept)."""
    return json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8")


def fit(data: JSONObject, budget: int = RESULTS_BUDGET) -> JSONObject:
    """``data`` (a results object) scrubbed and, when its file would be larger than
    ``budget`` bytes, with the longest test outputs shortened first (water-filling: every
    output longer than a common cap is cut to it), each keeping its verdict (first) line.
    Small enough already (every ordinary submission): returned as it was scrubbed."""
    return fitted(data, budget)[0]


def fitted(data: JSONObject, budget: int = RESULTS_BUDGET) -> tuple[JSONObject, bytes]:
    """:func:`fit` and the bytes of its result (:func:`encode`), encoded once where it fits
    at once (a grading writes its results after every exercise)."""
    data = textsafe.scrub(data)
    tests = [t for t in data["tests"] if isinstance(t, dict) and isinstance(t.get("output"), str)]
    for _ in range(6):
        payload = encode(data)
        excess = len(payload) - budget
        if excess <= 0:
            return data, payload
        sizes = [len(json.dumps(t["output"], ensure_ascii=False).encode()) for t in tests]
        level = _water_level(sizes, excess + len(SHORTENED.encode()) * len(tests))
        for test, size in zip(tests, sizes):
            if size > level:
                test["output"] = _shorten(test["output"], level, size)
    for test in tests:                               # still too large: verdict lines only
        test["output"] = _shorten(test["output"], 0, 1)
    for key, limit in (("output", 4000),):
        if isinstance(data.get(key), str):
            data[key] = clip(data[key], limit)
    for entry in (data.get("extra_data") or {}).get("exercises") or []:
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            entry["message"] = clip(entry["message"], 1000)
    return data, encode(data)


def _water_level(sizes: list[int], cut: int) -> int:
    """The largest cap such that cutting every size above it to it removes >= ``cut``."""
    low, high = 0, max(sizes, default=0)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(max(0, s - mid) for s in sizes) >= cut:
            low = mid
        else:
            high = mid - 1
    return low


def _shorten(output: str, encoded_cap: int, encoded_size: int) -> str:
    """``output`` cut to about ``encoded_cap`` bytes of JSON: its first line (at most
    :data:`VERDICT_LINE_BYTES`) always, then as much of the rest as fits, then a note."""
    first = textsafe.cap(output.partition("\n")[0], VERDICT_LINE_BYTES)
    raw_cap = int(encoded_cap * textsafe.utf8_len(output) / max(1, encoded_size))
    room = raw_cap - len(SHORTENED.encode())
    kept = textsafe.cap(output, room, marker="") if room > textsafe.utf8_len(first) else first
    return kept + SHORTENED


def validate(data: JSONObject) -> None:
    """Raise ``jsonschema.ValidationError`` if ``data`` is not a valid Gradescope results object."""
    import jsonschema
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(data, schema)
