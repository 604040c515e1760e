"""The release's data types: what the steps (:mod:`autograder.packaging.release.steps`) share
while releasing one exercise, the release in memory, and the step interface.

The bottom of the release modules: it imports none of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.contract import Exercise


class ReleaseError(RuntimeError):
    """The release cannot be generated (missing source, bad markers, leaked solution)."""


# ------------------------------------------------------------------------------ data


@dataclass
class Secret:
    """Lines from inside the solution regions of one source file.

    ``allowed`` are the lines that file also has *outside* its regions: they are in the
    student's copy anyway, so finding one of them in the release is not a leak.
    """
    origin: str
    lines: list[str]
    allowed: set[str]


@dataclass
class ExerciseJob:
    """What the steps share while releasing one exercise."""
    exercise: Exercise
    source_dir: Path                      # solutions/<folder>
    root: Path                            # the repository
    files: dict[str, str] = field(default_factory=dict)   # path in assignments/<folder>/ -> text
    public: set[str] = field(default_factory=set)         # of those, copied public tests
    secrets: list[Secret] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)   # per-file remark for the summary

    def source(self, name: str) -> Path:
        path = self.source_dir / name
        if not path.is_file():
            raise ReleaseError(f"{path.relative_to(self.root)} not found (needed by the "
                               f"{self.exercise.id} release)")
        return path


@dataclass
class Release:
    """The whole release in memory: paths relative to ``assignments/`` -> text."""
    files: dict[str, str]
    jobs: list[ExerciseJob]

    def encoded(self) -> dict[str, bytes]:
        return {path: text.encode("utf-8") for path, text in sorted(self.files.items())}


class Step:
    """One replaceable stage of the pipeline (cf. nbgrader's preprocessors)."""
    name = "step"

    def __call__(self, job: ExerciseJob) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name
