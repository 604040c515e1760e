"""What the audit's grading processes and its report share: secrets, tasks and gradings as types.

A :class:`Task` crosses from the audit to a grading process (:mod:`autograder.audit.worker`)
as one JSON line; a :class:`Grading` comes back the same way. Imports nothing heavy.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from autograder.jsontypes import JSONObject

MESSAGE_LIMIT = 2000            # characters of a failing test's message kept in the report


@dataclass(frozen=True)
class SecretChoice:
    """One hidden-input secret the cases are graded under. ``value`` (hex) is None for the
    checkout's own secret (``autograder/SEED_SECRET``), which the report never shows: only its
    ``fingerprint`` (a SHA-256 prefix of the hex, as ``BUILD_INFO.json`` records a build's)."""
    label: str
    value: str | None
    fingerprint: str


def sweep_secret(i: int) -> str:
    """The i-th fixed secret of a sweep (hex; public: a failure can be replayed with
    ``seeds.secret_override``). ``bench/seed_sweep.py`` and the audit share them."""
    return hashlib.sha256(f"attention-autograder seed sweep {i}".encode()).hexdigest()


FIRST_SWEEP = 100               # the audit's extra secrets: sweep_secret(100), (101), …


def fingerprint(hex_secret: str) -> str:
    return hashlib.sha256(hex_secret.strip().lower().encode()).hexdigest()[:12]


def checkout_secret() -> SecretChoice:
    """The checkout's own secret (read or made now, as grading would)."""
    from autograder import seeds
    secret, origin = seeds.load_secret()
    label = "checkout" if origin != "fallback" else "fallback (public)"
    return SecretChoice(label, None, fingerprint(secret.hex()))


def choose_secrets(count: int, pinned: list[str]) -> list[SecretChoice]:
    """``pinned`` hex secrets when given (``--secret``), else the checkout's own and
    ``count - 1`` sweep secrets."""
    if pinned:
        from autograder import seeds
        values = [seeds.parse_secret(p).hex() for p in pinned]
        if len(set(values)) != len(values):
            raise ValueError("--secret: the same secret is given twice")
        return [SecretChoice(f"pinned-{i + 1}", v, fingerprint(v)) for i, v in enumerate(values)]
    if count < 1:
        raise ValueError(f"--secrets must be at least 1, got {count}")
    sweep = [sweep_secret(FIRST_SWEEP + k) for k in range(count - 1)]
    return [checkout_secret()] + [SecretChoice(f"sweep-{FIRST_SWEEP + k}", v, fingerprint(v))
                                  for k, v in enumerate(sweep)]


@dataclass(frozen=True)
class Task:
    """Grade the submission folder ``folder`` on ``exercises`` under ``secret`` (hex; None:
    the checkout's own). ``key`` names the task in the reply."""
    key: int
    folder: str
    exercises: tuple[str, ...]
    secret: str | None

    def to_line(self) -> str:
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def from_line(cls, line: str) -> "Task":
        data = json.loads(line)
        return cls(int(data["key"]), str(data["folder"]), tuple(data["exercises"]), data["secret"])


@dataclass
class TestVerdict:
    """One test's result in one grading. ``message``: the failure text (clipped), "" when passed."""
    exercise: str
    number: str
    name: str
    passed: bool
    max_score: float
    seconds: float
    message: str = ""


@dataclass
class Grading:
    """One case graded under one secret. ``error``: why the engine could not grade it at all."""
    case: str
    secret: str
    score: float = 0.0
    max_score: float = 0.0
    seconds: float = 0.0
    tests: list[TestVerdict] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)     # exercise -> ExerciseStatus word
    error: str = ""

    def of(self, exercise: str) -> list[TestVerdict]:
        return [t for t in self.tests if t.exercise == exercise]

    def lost_points(self, exercise: str) -> bool:
        """Whether any test of ``exercise`` failed."""
        return any(not t.passed for t in self.of(exercise))

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JSONObject) -> "Grading":
        tests = [TestVerdict(**t) for t in data.get("tests", [])]
        return cls(**{**data, "tests": tests})
