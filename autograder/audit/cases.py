"""The cases an audit grades: what the kit holds and what an instructor adds.

From the checkout (``root``), for each audited exercise:

* ``solutions/<folder>/<file>``: the model answer as submitted (markers removed): full marks;
* its stub (the solution regions stripped as ``release`` strips them): zero;
* ``tests/submissions/<ex>/mutants/<case>.diff``: one bug each (format:
  :mod:`autograder.audit.mutants`): must lose points, on the tests its ``# expect-fail:``
  line names;
* ``tests/submissions/<ex>/alternatives/<case>.py``: a correct file in another style: full marks;
* ``tests/student_corpus/correct/<style>/``: five complete correct files written from the
  release alone, graded on every audited exercise: full marks.

From an instructor's folder (``audit --extra FOLDER``), the same layout as the kit's:
``FOLDER/<ex>/mutants/<case>.diff`` (the ``# expect-fail:`` line optional: without it any lost
point catches the mutant) and ``FOLDER/<ex>/alternatives/<case>.py``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from autograder import contract
from autograder.audit import mutants

SUBMISSIONS = Path("tests") / "submissions"          # under the checkout
CORRECT_SETS = Path("tests") / "student_corpus" / "correct"


class CaseKind(enum.Enum):
    """What a case is, hence what it must get."""
    SOLUTION = "solution"
    STUB = "stub"
    MUTANT = "mutant"
    ALTERNATIVE = "alternative"
    CORRECT_SET = "correct_set"

    @property
    def correct(self) -> bool:
        """Correct code: must keep full marks (a lost point is a false failure)."""
        return self in (CaseKind.SOLUTION, CaseKind.ALTERNATIVE, CaseKind.CORRECT_SET)


class Origin(enum.Enum):
    """Where a case comes from."""
    KIT = "kit"              # the checkout (solutions/, tests/)
    EXTRA = "extra"          # the instructor's --extra folder


@dataclass(frozen=True)
class Case:
    """One submission to grade: ``files`` (path in the submission -> its bytes) graded on
    ``exercises``; for a mutant, the ``# expect-fail:`` words (``expected``)."""
    kind: CaseKind
    name: str
    exercises: tuple[str, ...]
    files: dict[str, bytes] = field(hash=False, compare=False)
    origin: Origin = Origin.KIT
    expected: tuple[str, ...] = ()
    path: str = ""           # the mutant, alternative or folder it was read from ("" for the rest)

    @property
    def label(self) -> str:
        """``ex1/solution``, ``ex1/mutant/np_no_scale``, ``extra/ex2/alternative/loops``,
        ``student/correct_set/a_plain``."""
        if self.kind in (CaseKind.SOLUTION, CaseKind.STUB):
            return f"{self.exercises[0]}/{self.kind.value}"
        where = "student" if self.kind is CaseKind.CORRECT_SET else ",".join(self.exercises)
        prefix = "extra/" if self.origin is Origin.EXTRA else ""
        return f"{prefix}{where}/{self.kind.value}/{self.name}"


class CaseError(ValueError):
    """A corpus file that cannot become a case (a mutant that no longer applies, a bad folder)."""


def stub_source(solution: str, filename: str) -> str:
    """The stub students get: every solution region raises ``NotImplementedError``."""
    from autograder.packaging.release.markers import strip_solutions
    return strip_solutions(solution, filename).text


def exercise_cases(root: Path, ex: contract.Exercise) -> list[Case]:
    """The solution and the stub of one exercise."""
    solution_file = root / "solutions" / ex.folder / ex.filename
    if not solution_file.is_file():
        raise CaseError(f"{solution_file} is missing: the audit runs in a checkout of the kit")
    text = solution_file.read_text(encoding="utf-8")
    return [Case(CaseKind.SOLUTION, "solution", (ex.id,), {ex.filename: mutants.as_submitted(text).encode()},
                 path=str(solution_file)),
            Case(CaseKind.STUB, "stub", (ex.id,), {ex.filename: stub_source(text, ex.filename).encode()})]


def _mutant(path: Path, root: Path, ex: contract.Exercise, origin: Origin) -> Case:
    text = path.read_text(encoding="utf-8")
    try:
        source = mutants.apply_patch(mutants.solution_source(root, ex), text)
        expected = mutants.expected_words(text, required=origin is Origin.KIT)
    except mutants.PatchError as exc:
        raise CaseError(f"{path}: {exc}") from None
    return Case(CaseKind.MUTANT, path.stem, (ex.id,), {ex.filename: source.encode()}, origin,
                tuple(expected), str(path))


def corpus_cases(folder: Path, root: Path, ex: contract.Exercise, origin: Origin) -> list[Case]:
    """``folder/<ex>/mutants/*.diff`` and ``folder/<ex>/alternatives/*.py``."""
    base = folder / ex.id
    cases = [_mutant(p, root, ex, origin) for p in sorted((base / "mutants").glob("*.diff"))]
    cases += [Case(CaseKind.ALTERNATIVE, p.stem, (ex.id,), {ex.filename: p.read_bytes()},
                   origin, path=str(p)) for p in sorted((base / "alternatives").glob("*.py"))]
    return cases


def correct_set_cases(root: Path, exercises: tuple[contract.Exercise, ...]) -> list[Case]:
    """Each folder of ``tests/student_corpus/correct/``, graded on ``exercises`` (its files for
    other exercises are left in: a submission holds them all)."""
    sets = root / CORRECT_SETS
    if not sets.is_dir():
        return []
    ids = tuple(ex.id for ex in exercises)
    return [Case(CaseKind.CORRECT_SET, folder.name, ids, _folder_files(folder), path=str(folder))
            for folder in sorted(p for p in sets.iterdir() if p.is_dir())]


def _folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of a submission folder, byte for byte (caches left out)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def check_extra(folder: Path, exercises: tuple[contract.Exercise, ...]) -> None:
    """An ``--extra`` folder holds only ``<ex id>/mutants|alternatives`` (a typo would
    otherwise audit nothing, silently)."""
    if not folder.is_dir():
        raise CaseError(f"--extra {folder}: not a folder")
    for child in sorted(folder.iterdir()):
        if child.name.startswith("."):
            continue
        if not child.is_dir() or child.name not in contract.BY_ID:
            raise CaseError(f"--extra {folder}: {child.name!r} is not an exercise folder "
                            f"(expected {', '.join(contract.BY_ID)}, each with mutants/ and alternatives/)")
        unknown = sorted(p.name for p in child.iterdir() if p.name not in ("mutants", "alternatives")
                         and not p.name.startswith("."))
        if unknown:
            raise CaseError(f"--extra {child}: unexpected {', '.join(unknown)} (only mutants/ and alternatives/)")
    if not any((folder / ex.id).is_dir() for ex in exercises):
        raise CaseError(f"--extra {folder}: no folder for the audited exercises "
                        f"({', '.join(ex.id for ex in exercises)})")


def collect(root: Path, exercises: tuple[contract.Exercise, ...], extra: Path | None = None,
            kit: bool = True) -> list[Case]:
    """Every case of the audit: the kit's (``kit``) and the ``extra`` folder's."""
    cases: list[Case] = []
    if kit:
        for ex in exercises:
            cases += exercise_cases(root, ex)
            cases += corpus_cases(root / SUBMISSIONS, root, ex, Origin.KIT)
        cases += correct_set_cases(root, exercises)
    if extra is not None:
        check_extra(extra, exercises)
        for ex in exercises:
            cases += corpus_cases(extra, root, ex, Origin.EXTRA)
    labels = [c.label for c in cases]
    if len(set(labels)) != len(labels):
        raise CaseError(f"two cases share a name: {sorted({x for x in labels if labels.count(x) > 1})}")
    return cases
