"""The staff outputs of a batch, written after grading: ``grades.csv`` (one row per person),
the LMS imports asked for (``canvas.csv``, ``moodle.csv``) and ``report.html``
(:func:`write`); :func:`build_view` gathers what they need from the batch's rows and each
``results.json``; :func:`run_facts` the run's facts."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import autograder
from autograder import contract
from autograder.staff import late as late_policy
from autograder.staff import lms, report
from autograder.staff.analysis import Analysis, analyse
from autograder.staff.model import ClassView, Line, RunFacts, SecretFacts, load_submissions
from autograder.staff.options import Options

if TYPE_CHECKING:
    from autograder.batching.runner import Row
    from autograder.staff.similarity import InBackground


@dataclass
class Written:
    """What :func:`write` wrote, and what the analysis found (for ``summary.md``)."""
    gradebook: Path
    report: Path
    analysis: Analysis
    view: ClassView


def build_view(rows: Sequence["Row"], out_dir: Path, facts: RunFacts, options: Options) -> ClassView:
    """The class: each row with its results read back, one line per person, the late policy applied."""
    submissions = load_submissions(rows, out_dir)
    lines = []
    for sub in submissions:
        if options.late is not None:
            sub.submitted = late_policy.submission_time(sub.entry)
        for person in sub.entry.people():
            outcome = (late_policy.apply(options.late, person, sub.submitted, sub.total, facts.max_total)
                       if options.late is not None else None)
            lines.append(Line(person, sub, outcome))
    return ClassView(submissions, lines, facts, options, Path(out_dir))


def write(view: ClassView, csv_path: Path, similarity: InBackground | None = None) -> Written:
    """``grades.csv``, the LMS imports and ``report.html`` (next to ``csv_path``);
    ``similarity``: the check started while the class was graded."""
    options = view.options
    lms.write_gradebook(csv_path, view.lines, view.exercises, per_test=options.per_test,
                        late=options.late is not None)
    analysis = analyse(view, similarity)
    folder = Path(csv_path).parent
    if "canvas" in options.lms:
        analysis.exports.append(lms.write_canvas(folder / "canvas.csv", view.lines, view.facts.max_total,
                                                 assignment_name=options.assignment_name,
                                                 assignment_id=options.assignment_id))
    if "moodle" in options.lms:
        analysis.exports.append(lms.write_moodle(folder / "moodle.csv", view.lines,
                                                 assignment_name=options.assignment_name))
    return Written(Path(csv_path), report.write(view, analysis), analysis, view)


def secret_facts() -> SecretFacts:
    """Which secret this kit's graders draw hidden inputs from (its sha256 prefix, never it)."""
    from autograder import seeds

    secret, origin = seeds.load_secret()
    info = _build_info()
    kind = {"file": "build" if info else "checkout", "created": "checkout"}.get(origin, origin)
    pinned = info.get("seed_secret_pinned") if isinstance(info.get("seed_secret_pinned"), bool) else None
    return SecretFacts(kind, hashlib.sha256(secret).hexdigest()[:16], pinned)


def _build_info() -> dict:
    path = Path(autograder.__file__).resolve().parent / "BUILD_INFO.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_facts(exercises: tuple[contract.Exercise, ...], *, found=None, jobs: int = 1, scheduler: str | None = None,
              warm: bool = True, elapsed: float = 0.0, graded_now: int = 0, kept: int = 0) -> RunFacts:
    """The batch's facts for the report (the build id as :mod:`autograder.batching.resume` keys results)."""
    from autograder.batching import resume

    return RunFacts(exercises=tuple(exercises), build_id=resume.build_id(), kit_version=autograder.__version__,
                    secret=secret_facts(), jobs=jobs, scheduler=scheduler or "", warm=warm, elapsed=elapsed,
                    graded_now=graded_now, kept=kept, finished=datetime.now(timezone.utc),
                    gradescope=bool(getattr(found, "gradescope", False)),
                    notes=list(getattr(found, "notes", []) or []), ignored=list(getattr(found, "ignored", []) or []))
