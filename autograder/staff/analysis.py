"""What the staff outputs say about the class, computed once: the tests' statistics, the
misconceptions, the submissions that need a human, the similar pairs and the LMS exports
written (:func:`analyse`; rendered by :mod:`autograder.staff.report` and ``summary.md``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder import textsafe
from autograder.sandbox import levels
from autograder.staff import stats
from autograder.staff.lms import Export
from autograder.staff.model import ClassView, status_text
from autograder.staff.similarity import Candidate, InBackground, Similarity, find_similar


@dataclass
class Attention:
    """A submission that needs a human, and why (one or more reasons)."""
    student: str
    submission: str
    status: str
    reasons: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    items: list[stats.ItemStat]
    misconceptions: list[stats.Misconception]
    attention: list[Attention]
    similarity: Similarity
    exports: list[Export] = field(default_factory=list)

    @property
    def look(self) -> list[stats.ItemStat]:
        return [i for i in self.items if i.look]


def needs_a_look(view: ClassView) -> list[Attention]:
    """Submissions not graded, with an exercise that did not run, that reached into the kit,
    graded at a weaker isolation level than the rest of the class, after the late cut-off, or
    without a submission time under a late policy."""
    found = []
    names = levels.names()                                                  # strongest first
    rank = {level: len(names) - i for i, level in enumerate(names)}
    strongest = max(view.isolation_levels(), key=lambda level: rank.get(level, 0), default="")
    for sub in view.submissions:
        reasons = [sub.row.reason] if sub.row.reason else []
        level = sub.row.isolation
        if level and rank.get(level, 0) < rank.get(strongest, 0):
            reasons.append(f"graded at the {level} isolation level, weaker than the class's {strongest}")
        for exercise, records in sorted(sub.reach_ins.items()):
            events = sorted({str(r[0]) for r in records if r})
            reasons.append(f"{exercise}: reached into the kit ({', '.join(events[:4])}); the isolation held, "
                           "read the code")
        late = [line.late for line in view.lines if line.view is sub and line.late is not None]
        if any(outcome.cut_off for outcome in late):
            reasons.append("submitted after the late cut-off: zero")
        if any(outcome.submitted.when is None for outcome in late):
            reasons.append("no submission time: no late policy applied")
        if reasons or not sub.graded:
            found.append(Attention(sub.entry.student, textsafe.name(sub.entry.path.name, None),
                                   status_text(sub.row), reasons or ["not graded"]))
    return found


def candidates(entries) -> list[Candidate]:
    """The submissions the similarity check compares: every entry of the class, in order."""
    return [Candidate(e.key, e.student, e.path) for e in entries]


def start_similar(entries, exercises, options) -> InBackground | None:
    """The similarity check of the class's ``entries`` started now, while they are graded
    (None when ``options`` turn it off); :func:`analyse` takes its result."""
    if not options.similarity:
        return None
    return InBackground(candidates(entries), tuple(exercises), options.similarity_threshold)


def similar(view: ClassView, started: InBackground | None = None) -> Similarity:
    """The class's similar pairs: the check ``started`` earlier on the same submissions, or
    run now."""
    if not view.options.similarity:
        return Similarity(False, "turned off (--no-similarity)", view.options.similarity_threshold)
    compared = candidates(s.entry for s in view.submissions)
    if (started is not None and started.candidates == tuple(compared)
            and started.exercises == tuple(view.exercises) and started.threshold == view.options.similarity_threshold):
        return started.result()
    return find_similar(compared, view.exercises, view.options.similarity_threshold)


def analyse(view: ClassView, similarity: InBackground | None = None) -> Analysis:
    """``similarity``: the check started while the class was graded (:func:`start_similar`)."""
    return Analysis(items=stats.item_stats(view.submissions), misconceptions=stats.misconceptions(view.submissions),
                    attention=needs_a_look(view), similarity=similar(view, similarity))
