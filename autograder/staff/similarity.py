"""Similar submissions, flagged for a human to look at (advisory only: never a grade).

Each exercise's file of every submission (as the grader reads it: :func:`autograder.intake.collect`,
so zips and notebooks too) is compared with the same file of every other submission by
`copydetect <https://github.com/blingenf/copydetect>`_ (MIT; the winnowing of MOSS): the code
is tokenised and normalised (names of variables, functions, attributes and classes, strings,
comments and layout do not count), every window of :data:`NOISE` normalised characters
fingerprinted, and the fingerprints of the release's starter file
(``assignments/<exercise>/<file>``, when this kit has it) removed first, so that code every
student was given never makes two submissions alike.

A pair is flagged when

* at least ``threshold`` (default 0.8) of one submission's own code, over all its exercise
  files, is found in the other's (copydetect's per-file similarity, weighted by each file's
  fingerprinted code); or
* one exercise file is the same code both ways (at least :data:`SAME_FILE` of each side's
  fingerprinted code found in the other), with at least :data:`SAME_FILE_MIN_CODE` characters
  of its own code: one exercise copied.

Independent correct solutions of these short, tightly specified exercises do look alike
after normalisation: on the kit's corpora of thirteen independently written correct
submissions, the most alike pair shares 72 % of its code (one exercise file 91 %), a
submission and a copy of it with one bug 100 %. The report shows each flagged pair's shared
regions side by side.

copydetect is the optional ``[staff]`` extra (``pip install "attention-autograder[staff]"``);
without it the report says the check did not run.
"""
from __future__ import annotations

import io
import logging
import threading
from dataclasses import dataclass, field
from itertools import combinations, groupby
from pathlib import Path
from typing import Sequence

import autograder
from autograder import contract, textsafe

NOISE = 40                  # copydetect's k: fingerprinted windows of this many normalised characters
WINDOW = 1                  # winnowing window (1: every window kept; copydetect's default)
MIN_OWN_CODE = 60           # a file with fewer fingerprinted characters than this is not compared
SAME_FILE = 0.97            # one file the same code both ways
SAME_FILE_MIN_CODE = 400
CONTEXT_LINES = 2           # lines shown around a shared region
MAX_SHOWN_LINES = 120       # per file and pair in the report


@dataclass(frozen=True)
class Piece:
    """Part of a displayed line: its text and whether it is shared with the other file."""
    text: str
    shared: bool


@dataclass(frozen=True)
class ShownLine:
    """A line of a file as the report shows it (``number`` 0: a gap of ``skipped`` lines)."""
    number: int
    pieces: tuple[Piece, ...] = ()
    skipped: int = 0


@dataclass
class FileMatch:
    """One exercise file of a flagged pair."""
    exercise: str
    filename: str
    share_a: float                    # of a's fingerprinted code found in b
    share_b: float
    lines_a: list[ShownLine] = field(default_factory=list)
    lines_b: list[ShownLine] = field(default_factory=list)
    regions: tuple = field(default=(), repr=False)   # (code a, slices a, code b, slices b), copydetect's

    @property
    def share(self) -> float:
        return max(self.share_a, self.share_b)


@dataclass
class SimilarPair:
    a: str                            # display names
    b: str
    key_a: str
    key_b: str
    share_a: float = 0.0              # of a's own code (all files) found in b
    share_b: float = 0.0
    files: list[FileMatch] = field(default_factory=list)      # the compared files, most alike first
    why: str = ""                     # which rule flagged it

    @property
    def share(self) -> float:
        return max(self.share_a, self.share_b)


@dataclass
class Similarity:
    """The check's outcome for the report."""
    ran: bool
    why_not: str = ""
    threshold: float = 0.0
    compared: int = 0                 # submissions with at least one file compared
    starter: dict[str, bool] = field(default_factory=dict)   # exercise -> starter code subtracted
    pairs: list[SimilarPair] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    """A submission to compare: its key, display name and path (folder or zip)."""
    key: str
    name: str
    path: Path


def starter_file(exercise: contract.Exercise) -> Path | None:
    """The release's starter file for ``exercise`` in this kit's checkout, if there is one."""
    path = autograder.repo_root() / "assignments" / exercise.folder / exercise.filename
    return path if path.is_file() else None


def find_similar(candidates: Sequence[Candidate], exercises: Sequence[contract.Exercise],
                 threshold: float) -> Similarity:
    """Every pair of ``candidates`` flagged by the rules of the module docstring."""
    try:
        import copydetect
        from copydetect import CodeFingerprint, compare_files
    except ImportError:
        return Similarity(False, 'copydetect is not installed (pip install "attention-autograder[staff]")',
                          threshold)
    from autograder.intake import collect

    quiet = _Quiet(Path(copydetect.__file__).parent)    # copydetect warns through the root logger
    root = logging.getLogger()
    root.addFilter(quiet)
    try:
        return _find(candidates, exercises, threshold, collect, CodeFingerprint, compare_files)
    finally:
        root.removeFilter(quiet)


class _Quiet(logging.Filter):
    """Drops the root logger's records that come from copydetect's own files, whatever thread
    logs them, and lets every other record through (the check may run beside a batch's own
    work: :class:`InBackground`)."""

    def __init__(self, package: Path):
        super().__init__()
        self.package = str(package)

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.pathname).startswith(self.package)


class InBackground:
    """:func:`find_similar` on a thread of its own, started before the class is graded: it reads
    the submissions' files, never a result, so a batch's report waits only for what is left
    of it (on a big class the pairwise comparison is the one part of a batch that does not
    run on every core). :meth:`result` waits for it and returns what it found, or raises
    what it raised. A daemon thread: an interrupted batch ends without waiting for it."""

    def __init__(self, candidates: Sequence[Candidate], exercises: Sequence[contract.Exercise],
                 threshold: float):
        self.candidates = tuple(candidates)
        self.exercises = tuple(exercises)
        self.threshold = threshold
        self._found: Similarity | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="similarity", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._found = find_similar(self.candidates, self.exercises, self.threshold)
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), in the caller's thread
            self._error = exc

    def result(self) -> Similarity:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._found is not None
        return self._found


def _find(candidates, exercises, threshold, collect, CodeFingerprint, compare_files) -> Similarity:  # noqa: N803
    sources = {c.key: collect(c.path, tuple(exercises)).found for c in candidates}
    outcome = Similarity(True, threshold=threshold)
    prints: dict[tuple[str, str], object] = {}
    for ex in exercises:
        starter = starter_file(ex)
        outcome.starter[ex.id] = starter is not None
        boilerplate = list(CodeFingerprint(ex.filename, NOISE, WINDOW, fp=io.StringIO(_read(starter))).hashes) \
            if starter else []
        by_source: dict[str, object] = {}    # the same file twice (a copy, an untouched starter): one fingerprint
        for c in candidates:
            found = sources[c.key].get(ex.id)
            if found is None or found.source is None:
                continue
            if found.source not in by_source:
                by_source[found.source] = CodeFingerprint(ex.filename, NOISE, WINDOW, boilerplate=boilerplate,
                                                          fp=io.StringIO(found.source))
            fingerprint = by_source[found.source]
            if fingerprint.token_coverage >= MIN_OWN_CODE:
                prints[(c.key, ex.id)] = fingerprint
    own = {c.key: sum(float(prints[(c.key, ex.id)].token_coverage) for ex in exercises if (c.key, ex.id) in prints)
           for c in candidates}
    outcome.compared = sum(1 for c in candidates if own[c.key] > 0)
    shown: dict[tuple, list[ShownLine]] = {}       # the same file marked the same way: shown once
    for a, b in combinations([c for c in candidates if own[c.key] > 0], 2):
        pair = _compare(a, b, exercises, prints, own, compare_files)
        if pair is not None and _flag(pair, threshold, prints):
            for match in pair.files:                     # the side-by-side view, for flagged pairs only
                code_a, slices_a, code_b, slices_b = match.regions
                match.lines_a = _shown_once(shown, code_a, slices_a)
                match.lines_b = _shown_once(shown, code_b, slices_b)
            outcome.pairs.append(pair)
        elif pair is not None:
            pair.files.clear()
    outcome.pairs.sort(key=lambda p: (-p.share, p.a, p.b))
    return outcome


def _compare(a: Candidate, b: Candidate, exercises, prints, own, compare_files) -> SimilarPair | None:
    pair = SimilarPair(a.name, b.name, a.key, b.key)
    found_a = found_b = 0.0
    for ex in exercises:
        print_a, print_b = prints.get((a.key, ex.id)), prints.get((b.key, ex.id))
        if print_a is None or print_b is None:
            continue
        _overlap, (share_a, share_b), (slices_a, slices_b) = compare_files(print_a, print_b)
        if not share_a and not share_b:
            continue
        found_a += float(share_a) * float(print_a.token_coverage)
        found_b += float(share_b) * float(print_b.token_coverage)
        match = FileMatch(ex.id, ex.filename, float(share_a), float(share_b))
        match.regions = (print_a.raw_code, slices_a, print_b.raw_code, slices_b)
        pair.files.append(match)
    if not pair.files:
        return None
    pair.share_a, pair.share_b = found_a / own[a.key], found_b / own[b.key]
    pair.files.sort(key=lambda f: -f.share)
    return pair


def _flag(pair: SimilarPair, threshold: float, prints) -> bool:
    if pair.share >= threshold:
        pair.why = f"{pair.share:.0%} of one submission's own code is in the other"
        return True
    for f in pair.files:
        small = min(float(prints[(pair.key_a, f.exercise)].token_coverage),
                    float(prints[(pair.key_b, f.exercise)].token_coverage))
        if min(f.share_a, f.share_b) >= SAME_FILE and small >= SAME_FILE_MIN_CODE:
            pair.why = f"{f.filename} is the same code in both ({min(f.share_a, f.share_b):.0%} each way)"
            return True
    return False


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def shown_lines(code: str, slices) -> list[ShownLine]:
    """``code`` as lines of :class:`Piece` (shared or not, from copydetect's ``[starts, ends]``
    character slices), each made safe to show (controls and bidi overrides visible), with
    only the shared lines and :data:`CONTEXT_LINES` around them kept (gaps as one line)."""
    import numpy as np

    marks = np.zeros(len(code) + 1, dtype=np.int32)
    if len(slices) and len(slices[0]):
        for start, end in zip(slices[0], slices[1]):
            marks[max(0, min(len(code), int(start)))] += 1
            marks[max(0, min(len(code), int(end)))] -= 1
    shared = (np.cumsum(marks)[:len(code)] > 0).tolist()
    lines, offset = [], 0
    for number, text in enumerate(code.split("\n"), start=1):
        flags = shared[offset:offset + len(text)]
        offset += len(text) + 1
        if text.endswith("\r"):                      # a CRLF file: the line break is not shown
            text, flags = text[:-1], flags[:-1]
        lines.append((number, text, flags))
    keep = set()
    for index, (_, _, flags) in enumerate(lines):
        if any(flags):
            keep.update(range(index - CONTEXT_LINES, index + CONTEXT_LINES + 1))
    shown: list[ShownLine] = []
    skipped = 0
    for index, (number, text, flags) in enumerate(lines):
        if index not in keep or len(shown) >= MAX_SHOWN_LINES:
            skipped += 1
            continue
        if skipped:
            shown.append(ShownLine(0, skipped=skipped))
            skipped = 0
        shown.append(ShownLine(number, tuple(_pieces(text, flags))))
    if skipped:
        shown.append(ShownLine(0, skipped=skipped))
    return shown


def _shown_once(shown: dict[tuple, list[ShownLine]], code: str, slices) -> list[ShownLine]:
    """:func:`shown_lines`, kept in ``shown`` by the code and its marks (read-only once made)."""
    key = (code, tuple(tuple(int(i) for i in side) for side in slices))
    if key not in shown:
        shown[key] = shown_lines(code, slices)
    return shown[key]


def _pieces(text: str, flags: list[bool]) -> list[Piece]:
    """``text`` cut where ``flags`` (one per character) changes: one :class:`Piece` per run."""
    pieces: list[Piece] = []
    start = 0
    for shared, run in groupby(flags):
        end = start + sum(1 for _ in run)
        pieces.append(Piece(textsafe.one_line(text[start:end].replace("\t", "    "), None), shared))
        start = end
    return pieces
