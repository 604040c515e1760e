"""What a grade says to the student: the summary at the top of results.json (``output``).

Presentation only: the engine (:mod:`autograder.grading`) decides the outcomes; this module
words them. Every submission-derived string is made safe first (:func:`results.one_line`,
:func:`results.indented`): no line of it is the student's.
"""
from __future__ import annotations

from autograder import intake, results


def summary(outcome: results.Results, submission: intake.Submission) -> str:
    """The student-facing summary: the total, one paragraph per exercise, the isolation."""
    lines = [f"Total: {outcome.score:g} / {outcome.max_score:g}", ""]
    if not outcome.complete:
        lines[0] += " (grading still under way: only the exercises listed below are done)"
    for ex_outcome in outcome.exercises:
        found = submission.found.get(ex_outcome.exercise)
        title = found.exercise.title if found else ex_outcome.exercise
        line = f"{ex_outcome.exercise} {title}: {ex_outcome.score:g} / {ex_outcome.max_score:g}"
        if ex_outcome.status is not results.ExerciseStatus.GRADED:
            line += f" [{ex_outcome.status.label}]"
        if ex_outcome.message:
            line += "\n" + results.indented(ex_outcome.message)
        for note in (found.notes if found else []):
            line += "\n    note: " + results.one_line(note, 500)
        lines.append(line)
    if outcome.isolation:
        lines += ["", f"Isolation: {outcome.isolation} — {results.one_line(outcome.isolation_description, 400)}"]
    return "\n".join(lines)
