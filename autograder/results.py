"""Gradescope ``results.json``: build the object, bound every string, write it atomically.

The file is always written by the grading process (never by the worker, never from stdout):
once with a zero score before any student code runs, then once with the real results.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

TEST_OUTPUT_LIMIT = 8_000          # per test; Gradescope itself cuts at 100,000
SUMMARY_LIMIT = 20_000
SCHEMA_PATH = Path(__file__).parent / "schemas" / "gradescope_results.schema.json"


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

    @property
    def name(self) -> str:
        return f"{self.exercise} · {self.title}"

    def to_json(self) -> dict:
        entry = {"name": self.name, "score": round(self.score, 4), "max_score": round(self.max_score, 4),
                 "status": "passed" if self.passed else "failed",
                 "output": clip(self.output, TEST_OUTPUT_LIMIT), "visibility": self.visibility,
                 "tags": [self.exercise]}
        if self.number:
            entry["number"] = self.number
        return entry


@dataclass
class Results:
    tests: list[TestResult] = field(default_factory=list)
    output: str = ""
    execution_time: float = 0.0

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 4)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 4)

    def by_exercise(self) -> dict[str, tuple[float, float]]:
        return _totals((t.exercise, t.score, t.max_score) for t in self.tests)

    def to_json(self) -> dict:
        return {"score": self.score, "execution_time": round(self.execution_time, 3),
                "output": clip(self.output, SUMMARY_LIMIT), "output_format": "text",
                "visibility": "visible", "stdout_visibility": "hidden",
                "tests": [t.to_json() for t in self.tests]}


def exercise_of(test: Mapping[str, Any]) -> str:
    """The exercise of a test entry in a results.json: its first tag (the kit writes
    ``["ex1"]``), else the first word of its name (``"ex1 · …"``)."""
    tags = test.get("tags") or []
    if tags and isinstance(tags[0], str):
        return tags[0]
    return str(test.get("name", "")).split(" ", 1)[0]


def totals_by_exercise(tests: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """``{exercise: (score, max_score)}`` over the test entries of a results.json read back."""
    return _totals((exercise_of(t), float(t.get("score", 0)), float(t.get("max_score", 0)))
                   for t in tests)


def _totals(rows: Iterable[tuple[str, float, float]]) -> dict[str, tuple[float, float]]:
    totals: dict[str, list[float]] = {}
    for exercise, score, max_score in rows:
        acc = totals.setdefault(exercise, [0.0, 0.0])
        acc[0] += score
        acc[1] += max_score
    return {ex: (round(s, 4), round(m, 4)) for ex, (s, m) in totals.items()}


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    note = f"\n… [{len(text) - limit} more characters cut]"
    return text[: limit - len(note)] + note


def placeholder(reason: str) -> dict:
    """The zero-score file written before any student code runs."""
    return {"score": 0.0, "execution_time": 0.0, "output": clip(reason, SUMMARY_LIMIT),
            "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden",
            "tests": []}


def write_atomic(path: str | Path, data: dict) -> None:
    """Write JSON to a temp file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, ensure_ascii=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def validate(data: dict) -> None:
    """Raise ``jsonschema.ValidationError`` if ``data`` is not a valid Gradescope results object."""
    import jsonschema
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(data, schema)
