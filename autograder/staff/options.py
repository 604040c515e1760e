"""The staff outputs' settings: ``batch``'s options for the gradebook, the LMS exports, the
late policy and the similarity check (:func:`add_arguments`, :func:`from_args`)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from autograder.staff.late import Extensions, LatePolicy, Penalty, PolicyError, parse_cutoff, parse_time

LMS_FORMATS = ("canvas", "moodle")
DEFAULT_ASSIGNMENT = "Attention exercises"
DEFAULT_SIMILARITY = 0.8         # share of one submission's own code found in the other (similarity.py)


@dataclass(frozen=True)
class Options:
    late: LatePolicy | None = None                 # None: no late policy (the default)
    lms: tuple[str, ...] = ()                      # of LMS_FORMATS
    assignment_name: str = DEFAULT_ASSIGNMENT
    assignment_id: str = ""                        # the LMS's id of the assignment, when known
    per_test: bool = False                         # one gradebook column per test
    similarity: bool = True
    similarity_threshold: float = DEFAULT_SIMILARITY


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("gradebook and exports (course staff)")
    group.add_argument("--per-test", action="store_true",
                       help="one gradebook column per test (each test's score) after the exercise columns")
    group.add_argument("--lms", default="", metavar="FORMATS",
                       help=f"also write the gradebook for an LMS: {', '.join(LMS_FORMATS)} (comma list): "
                            "canvas.csv (Canvas's gradebook import), moodle.csv (Moodle's CSV grade import)")
    group.add_argument("--assignment-name", default=DEFAULT_ASSIGNMENT,
                       help="the assignment's name in the LMS (default: %(default)s)")
    group.add_argument("--assignment-id", default="",
                       help="the LMS's id of the assignment (Canvas: the number in its URL), when known")
    late = parser.add_argument_group("late policy (off unless --due is given)")
    late.add_argument("--due", default=None, metavar="DATETIME",
                      help="due date with UTC offset, e.g. 2026-12-01T23:59:00+01:00")
    late.add_argument("--late-penalty", default=None, metavar="PERCENT/PERIOD",
                      help="e.g. 10%%/day: that share of the points possible per started period late")
    late.add_argument("--late-cutoff", default=None, metavar="DATETIME|+DURATION",
                      help="submissions after it score zero, e.g. 2026-12-04T23:59:00+01:00 or +72h")
    late.add_argument("--extensions", default=None, metavar="CSV",
                      help="per-student extensions: columns email/sid/student and due or extra_hours/extra_days")
    similar = parser.add_argument_group("similar submissions (advisory, never a grade)")
    similar.add_argument("--no-similarity", action="store_true", help="skip the similarity check")
    similar.add_argument("--similarity-threshold", type=float, default=DEFAULT_SIMILARITY,
                         help="flag a pair when this share of one file's code is found in the other "
                              "(0-1, default: %(default)s)")


def from_args(args: argparse.Namespace) -> Options:
    """The options ``batch`` was given; raises :class:`PolicyError` (said in words)."""
    lms = tuple(f.strip().lower() for f in (args.lms or "").split(",") if f.strip())
    unknown = [f for f in lms if f not in LMS_FORMATS]
    if unknown:
        raise PolicyError(f"--lms: unknown format(s) {', '.join(unknown)}; known: {', '.join(LMS_FORMATS)}")
    if not 0 < args.similarity_threshold <= 1:
        raise PolicyError("--similarity-threshold must be above 0 and at most 1")
    return Options(late=late_policy(args.due, args.late_penalty, args.late_cutoff, args.extensions),
                   lms=lms, assignment_name=args.assignment_name.strip() or DEFAULT_ASSIGNMENT,
                   assignment_id=args.assignment_id.strip(), per_test=args.per_test,
                   similarity=not args.no_similarity, similarity_threshold=args.similarity_threshold)


def late_policy(due: str | None, penalty: str | None = None, cutoff: str | None = None,
                extensions: str | None = None) -> LatePolicy | None:
    """A late policy from ``batch``'s options (None without ``--due``)."""
    if due is None:
        if penalty or cutoff or extensions:
            raise PolicyError("--late-penalty, --late-cutoff and --extensions need --due")
        return None
    when = parse_time(due)
    return LatePolicy(due=when, penalty=Penalty.parse(penalty) if penalty else None,
                      cutoff=parse_cutoff(cutoff, when) if cutoff else None,
                      extensions=Extensions.read(extensions) if extensions else Extensions())
