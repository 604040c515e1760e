"""One record per test, made once, when the engine collects the suites (:mod:`autograder.plugin`).

Every reader of "what the tests are" reads these: grading (titles, weights, visibility),
``check`` (what the public tests are worth), the coverage matrix (``autograder.coverage``:
the contract's sentences and the function × rule cells), the exports (nbgrader, otter) and the
kit's own tests (``python -m autograder.coverage --json`` prints them). A test's markers are
read in one place, :func:`autograder.plugin.record_of`.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from autograder.jsontypes import JSONObject

NOTE_PREFIX = "note (0 points): "


@dataclass(frozen=True)
class TestRecord:
    """A test as collected: ``weight`` is its ``points`` marker (0 for a note), ``points`` that
    weight scaled to its exercise's total; ``covers`` the ``function[:rule]`` names its verdict
    depends on; ``contract`` the ids of the contract's sentences it grades
    (:class:`autograder.exercise.Sentence`); ``note``: for a check the contract does not make,
    why it is feedback only (worth 0 points)."""
    __test__ = False                 # not a pytest test class

    exercise: str
    nodeid: str
    title: str
    weight: float
    public: bool
    covers: tuple[str, ...] = ()
    contract: tuple[str, ...] = ()
    note: str = ""
    points: float = 0.0

    @property
    def name(self) -> str:
        """The result's name: ``"ex4 · <title>"``."""
        return f"{self.exercise} · {self.title}"

    @property
    def short(self) -> str:
        """``test_masks.py::test_x`` (the suite's folder and the parameters dropped)."""
        return re.sub(r"\[.*\]$", "", self.nodeid.split("/", 1)[-1])

    def to_json(self) -> JSONObject:
        return {**asdict(self), "covers": list(self.covers), "contract": list(self.contract)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TestRecord":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for name in ("covers", "contract"):
            values[name] = tuple(values.get(name) or ())
        return cls(**values)
