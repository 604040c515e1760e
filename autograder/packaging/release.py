"""`python -m autograder release`: generate the student release ``assignments/`` from ``solutions/``.

For every exercise in :data:`autograder.contract.EXERCISES`, ``solutions/<folder>/`` holds

* ``<module>.py``      the completed file, solution regions between ``### BEGIN SOLUTION``
                       and ``### END SOLUTION``;
* ``<folder>.ipynb``   the companion teaching notebook (optional exercise cells carry
                       nbgrader markers and metadata);
* ``README.md``        the exercise's short README; the line ``<!-- release:rules -->`` is
                       replaced by rules rendered from the contract (appended if absent).

and the release writes ``assignments/<folder>/`` (stub, notebook, README, public tests)
plus ``assignments/README.md``. The work is a pipeline of small named steps in the style
of nbgrader's preprocessors: each step reads and updates an :class:`ExerciseJob`, and any
step can be replaced or reordered by passing ``steps=`` to :func:`build_release`.

Everything is computed in memory first (:func:`build_release`), then written
(:func:`write_release`) or compared with the disk (:func:`compare_release`, behind
``--check``). The output is a pure function of the sources: no timestamps, notebook cell
ids fixed from the cell's position, JSON keys sorted. Running it twice is byte-identical.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

import autograder
from autograder.contract import Exercise, select
from autograder.packaging import entrypoints
from autograder.packaging.markers import (BEGIN, END, MarkerError, check_stub, find_regions,
                                          leaked_lines, strip_solutions)
from autograder.packaging.readmes import render_checking, render_overview, render_rules

RULES_PLACEHOLDER = "<!-- release:rules -->"
# The check runtime (``assignments/autograder/``) is a copy of the kit's own code: written into
# assignments/ and every release.zip, but not kept in git and not part of "assignments/ is up
# to date with solutions/" (it is regenerated from the kit on every release and build).
RUNTIME_DIR = "autograder/"
# Folders that may appear inside assignments/ as side effects of using it; never "stale".
IGNORED_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints", ".pytest_cache"})
# Markers that must never reach a student (nbgrader's hidden-test markers included).
FORBIDDEN_MARKERS = (BEGIN, END, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
# Optional exercise cells put their answer inside a function (``def try_it(): ### BEGIN
# SOLUTION …``): the stub makes it return None, and the cell then prints a reminder instead of
# raising, so that Run All on a correct file never stops at an optional cell.
NOTEBOOK_CODE_STUB = ('# YOUR CODE HERE (optional exercise): return your answer\n'
                      'pass')


class ReleaseError(RuntimeError):
    """The release cannot be generated (missing source, bad markers, leaked solution)."""


def repo_root() -> Path:
    """The repository that holds this copy of the kit."""
    return Path(autograder.__file__).resolve().parents[1]


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


# ------------------------------------------------------------------------------ steps


class StripSolutions(Step):
    """``<module>.py``: every solution region becomes ``raise NotImplementedError("f: ...")``."""
    name = "StripSolutions"

    def __call__(self, job: ExerciseJob) -> None:
        ex = job.exercise
        path = job.source(ex.filename)
        try:
            stripped = strip_solutions(path.read_text(encoding="utf-8"),
                                       str(path.relative_to(job.root)))
        except MarkerError as exc:
            raise ReleaseError(str(exc)) from None
        if not stripped.regions:
            raise ReleaseError(f"{stripped.filename}: no '### {BEGIN}' region; "
                               "the stub would be the full solution")
        job.files[ex.filename] = stripped.text
        job.secrets.append(Secret(stripped.filename, stripped.secret_lines, stripped.kept_lines))
        owners = sorted({region.owner for region in stripped.regions})
        job.notes[ex.filename] = (f"{len(stripped.regions)} solution regions -> "
                                  "NotImplementedError")
        missing = [name for name in ex.names
                   if not any(o == name or o.startswith(name + ".") for o in owners)]
        if missing:
            job.notes[ex.filename] += f" (no region in: {', '.join(missing)})"


class RenderStubHeader(Step):
    """A comment header on the stub: what the file is and where the rules are."""
    name = "RenderStubHeader"

    def __call__(self, job: ExerciseJob) -> None:
        ex = job.exercise
        header = (f"# {ex.id} · {ex.title} — student file `{ex.filename}`.\n"
                  f"# Replace every `raise NotImplementedError(...)` with your code; keep the names\n"
                  f"# and signatures. Rules and how to check your work: README.md in this folder.\n")
        text = job.files[ex.filename]
        first, _, rest = text.partition("\n")
        if first.startswith("#!") or (first.startswith("#") and "coding" in first):
            job.files[ex.filename] = first + "\n" + header + rest   # keep shebang/encoding first
        else:
            job.files[ex.filename] = header + text


class VerifyStub(Step):
    """The stub compiles, and no marker or solution line survives in it."""
    name = "VerifyStub"

    def __call__(self, job: ExerciseJob) -> None:
        ex = job.exercise
        secret = next(s for s in job.secrets if s.origin.endswith(ex.filename))
        try:
            check_stub(job.files[ex.filename], f"assignments/{ex.folder}/{ex.filename}",
                       secret.lines, secret.allowed)
        except MarkerError as exc:
            raise ReleaseError(str(exc)) from None


class ReleaseNotebook(Step):
    """``<folder>.ipynb``: nbgrader's preprocessors, used as a library, then normalised.

    LockCells, ClearSolutions, ClearOutput, ClearHiddenTests, ComputeChecksums and
    CheckCellMetadata run in-process (no database, no nbgrader CLI). Afterwards cell ids
    are renumbered from the cell's position and notebook metadata is reduced to the
    kernelspec and language, so the file depends on nothing but its source.
    """
    name = "ReleaseNotebook"

    def config(self):
        from traitlets.config import Config
        cfg = Config()
        cfg.ClearSolutions.code_stub = {"python": NOTEBOOK_CODE_STUB}
        cfg.ClearSolutions.enforce_metadata = True
        cfg.ClearHiddenTests.enforce_metadata = True
        cfg.LockCells.lock_solution_cells = True
        cfg.LockCells.lock_grade_cells = True
        cfg.LockCells.lock_readonly_cells = True
        return cfg

    def preprocessors(self):
        from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearOutput,
                                            ClearSolutions, ComputeChecksums, LockCells)
        cfg = self.config()
        return [cls(config=cfg) for cls in (CheckCellMetadata, LockCells, ClearSolutions,
                                            ClearOutput, ClearHiddenTests, ComputeChecksums,
                                            CheckCellMetadata)]

    def __call__(self, job: ExerciseJob) -> None:
        import nbformat
        name = f"{job.exercise.folder}.ipynb"
        path = job.source(name)
        origin = str(path.relative_to(job.root))
        nb = nbformat.read(path, as_version=4)
        job.secrets.append(notebook_secret(nb, origin))
        resources: dict = {}
        try:
            for pre in self.preprocessors():
                nb, resources = pre.preprocess(nb, resources)
        except Exception as exc:  # nbgrader raises RuntimeError / ValidationError
            raise ReleaseError(f"{origin}: {exc}") from None
        job.files[name] = dump_notebook(normalise_notebook(nb))
        solution_cells = sum(1 for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
        job.notes[name] = f"{len(nb.cells)} cells ({solution_cells} optional exercise)"


class RenderReadme(Step):
    """``README.md`` from ``solutions/<folder>/README.md`` plus rules from the contract.

    Runs after :class:`CopyPublicTests`: the "Checking your work" section mentions the
    public tests only when there are some.
    """
    name = "RenderReadme"

    def __call__(self, job: ExerciseJob) -> None:
        text = job.source("README.md").read_text(encoding="utf-8")
        rules = render_rules(job.exercise)
        if RULES_PLACEHOLDER in text:
            text = text.replace(RULES_PLACEHOLDER, rules.rstrip("\n"))
        else:
            text = text.rstrip("\n") + "\n\n" + rules
        job.files["README.md"] = (text.rstrip("\n") + "\n\n"
                                  + render_checking(job.exercise, bool(job.public)))


class CopyPublicTests(Step):
    """Hook: ``autograder/suites/<folder>/public/test_*.py`` -> ``assignments/<folder>/tests/``.

    The public tests are written elsewhere; when the folder does not exist the release
    simply has no ``tests/``. A ``conftest.py`` next to them is copied too (public tests
    need one to import the student's file from the folder above).
    """
    name = "CopyPublicTests"
    patterns = ("test_*.py", "conftest.py")

    def public_dir(self, job: ExerciseJob) -> Path:
        return job.root / "autograder" / "suites" / job.exercise.folder / "public"

    def __call__(self, job: ExerciseJob) -> None:
        folder = self.public_dir(job)
        if not folder.is_dir():
            return
        for pattern in self.patterns:
            for path in sorted(folder.glob(pattern)):
                if path.is_file():
                    rel = f"tests/{path.name}"
                    job.files[rel] = path.read_text(encoding="utf-8")
                    job.public.add(rel)


class AddEntryPoints(Step):
    """Where the exercise has public tests and the release ships the check runtime:
    ``check.py`` (a launcher that finds the runtime by walking up), the notebook's last two
    cells (``import check; check.run()``) and a header on the copied public tests; see
    :mod:`autograder.packaging.entrypoints`. Runs after :class:`ReleaseNotebook` and
    :class:`CopyPublicTests`."""
    name = "AddEntryPoints"

    def __call__(self, job: ExerciseJob) -> None:
        from autograder.packaging import student_runtime
        ex = job.exercise
        if not job.public or not student_runtime.available(job.root):
            return
        job.files["check.py"] = entrypoints.launcher(ex)
        job.notes["check.py"] = "launcher: `python check.py` runs this exercise's public tests"
        for rel in sorted(job.public):
            if rel.endswith(".py") and PurePosixPath(rel).name.startswith("test_"):
                job.files[rel] = entrypoints.public_test_header(ex) + job.files[rel]
        name = f"{ex.folder}.ipynb"
        if name in job.files:
            import nbformat
            nb = nbformat.reads(job.files[name], as_version=4)
            markdown, code = entrypoints.notebook_check_cells(ex)
            nb.cells += [nbformat.v4.new_markdown_cell(markdown), nbformat.v4.new_code_cell(code)]
            job.files[name] = dump_notebook(normalise_notebook(nb))


class VerifyNoSolutionText(Step):
    """No file of this exercise holds a marker or a line from a solution region."""
    name = "VerifyNoSolutionText"

    def __call__(self, job: ExerciseJob) -> None:
        problems = find_leaks({f"{job.exercise.folder}/{p}": t for p, t in job.files.items()},
                              job.secrets,
                              skip={f"{job.exercise.folder}/{p}" for p in job.public})
        if problems:
            raise ReleaseError("solution text in the release:\n  " + "\n  ".join(problems))


class ShipCheckRuntime(Step):
    """``assignments/autograder/``: the student-side runtime behind ``python -m autograder check``.

    Release-wide (its :meth:`finish` runs once, after every exercise): the core of the kit,
    the released exercises' public tests and the helpers they use, and nothing of the hidden
    suites, the reference or the solutions; see :mod:`autograder.packaging.student_runtime`.
    Ships nothing when the repository has no kit (e.g. a bare ``solutions/`` tree).
    """
    name = "ShipCheckRuntime"

    def __call__(self, job: ExerciseJob) -> None:
        pass                                   # nothing per exercise

    def finish(self, root: Path, jobs: Sequence[ExerciseJob]) -> tuple[dict[str, str], set[str]]:
        """``({path in assignments/: text}, {paths to scan for markers only})``.

        The runtime is the kit's own code, written independently of the solutions, so it is
        checked for markers but not line by line against them (``return fig`` is no leak).
        """
        from autograder.packaging import student_runtime as runtime
        if not runtime.available(root):
            return {}, set()
        exercises = [job.exercise for job in jobs]
        try:
            files, _public = runtime.runtime_files(root, exercises)
            files.update(runtime.worth_file(root, exercises))
        except runtime.StudentRuntimeError as exc:
            raise ReleaseError(str(exc)) from None
        with_tests = [job.exercise for job in jobs if job.public]
        if with_tests:                         # entry points at the release root
            files["check.py"] = entrypoints.launcher(None)
            files["conftest.py"] = entrypoints.CONFTEST
            files["pytest.ini"] = entrypoints.pytest_ini(with_tests)
        return files, set(files)


DEFAULT_STEPS: tuple[Step, ...] = (StripSolutions(), RenderStubHeader(), VerifyStub(),
                                   ReleaseNotebook(), CopyPublicTests(), AddEntryPoints(),
                                   RenderReadme(), VerifyNoSolutionText(), ShipCheckRuntime())


# ------------------------------------------------------------------------------ helpers


def notebook_secret(nb, origin: str) -> Secret:
    """The solution-region lines of a notebook, and the lines its cells keep."""
    lines: list[str] = []
    kept: set[str] = set()
    for index, cell in enumerate(nb.cells):
        source = cell.source
        try:
            regions = find_regions(source, f"{origin} (cell {index})")
        except MarkerError as exc:
            raise ReleaseError(str(exc)) from None
        inside = {i for b, e, _ in regions for i in range(b, e + 1)}
        for i, line in enumerate(source.splitlines(), start=1):
            (lines.append if i in inside else kept.add)(line.strip())
        if not regions and cell.metadata.get("nbgrader", {}).get("solution"):
            lines.extend(line.strip() for line in source.splitlines())   # whole-cell solution
    return Secret(origin, lines, kept)


def normalise_notebook(nb):
    """Deterministic ids and metadata; validated nbformat 4.5."""
    import nbformat
    nb.nbformat, nb.nbformat_minor = 4, 5
    kernelspec = nb.metadata.get("kernelspec") or {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata = nbformat.from_dict({"kernelspec": dict(kernelspec),
                                      "language_info": {"name": "python"}})
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:02d}"
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.validate(nb)
    return nb


def dump_notebook(nb) -> str:
    import nbformat
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def scannable_text(path: str, text: str) -> str:
    """The text a reader sees: a notebook's cell sources, any other file as is."""
    if path.endswith(".ipynb"):
        cells = json.loads(text).get("cells", [])
        return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in cells)
    return text


def find_leaks(files: dict[str, str], secrets: Iterable[Secret],
               skip: Iterable[str] = ()) -> list[str]:
    """``"path: problem"`` for every marker or solution line found in ``files``.

    Files in ``skip`` (copied public tests) are checked for markers only.
    """
    skip = set(skip)
    secrets = list(secrets)
    problems: list[str] = []
    for path, text in sorted(files.items()):
        seen = scannable_text(path, text)
        for marker in FORBIDDEN_MARKERS:
            if marker in seen:
                problems.append(f"{path}: contains the marker {marker!r}")
        if path in skip:
            continue
        for secret in secrets:
            for line in leaked_lines(seen, secret.lines, secret.allowed):
                problems.append(f"{path}: solution line from {secret.origin}: {line!r}")
    return problems


# ------------------------------------------------------------------------------ pipeline


def release_exercise(ex: Exercise, root: Path, steps: Sequence[Step] = DEFAULT_STEPS) -> ExerciseJob:
    job = ExerciseJob(exercise=ex, source_dir=root / "solutions" / ex.folder, root=root)
    for step in steps:
        step(job)
    return job


def build_release(root: Path | None = None, exercises: str | list[str] | None = None,
                  steps: Sequence[Step] = DEFAULT_STEPS) -> Release:
    """The release in memory. :class:`ReleaseError` when a source is missing or leaks."""
    root = Path(root) if root else repo_root()
    try:
        chosen = select(exercises)
    except ValueError as exc:
        raise ReleaseError(str(exc)) from None
    jobs = [release_exercise(ex, root, steps) for ex in chosen]
    files: dict[str, str] = {}
    for job in jobs:
        for rel, text in job.files.items():
            files[f"{job.exercise.folder}/{rel}"] = text
    files["README.md"] = render_overview([job.exercise for job in jobs])
    public = {f"{j.exercise.folder}/{p}" for j in jobs for p in j.public}
    for step in steps:                                  # release-wide steps (ShipCheckRuntime)
        if callable(getattr(step, "finish", None)):
            extra, copied = step.finish(root, jobs)
            files.update(extra)
            public |= copied
    # Across exercises: no exercise's solution text in another exercise's files.
    problems = find_leaks(files, [s for j in jobs for s in j.secrets], skip=public)
    if problems:
        raise ReleaseError("solution text in the release:\n  " + "\n  ".join(problems))
    return Release(files=dict(sorted(files.items())), jobs=jobs)


def existing_files(out: Path) -> dict[str, bytes]:
    """Files under ``out`` (relative posix paths), ignoring caches and checkpoints."""
    if not out.is_dir():
        return {}
    found = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out)
        if path.is_file() and not IGNORED_DIRS.intersection(rel.parts[:-1]):
            found[rel.as_posix()] = path.read_bytes()
    return found


@dataclass
class Comparison:
    changed: list[str]
    missing: list[str]
    stale: list[str]

    @property
    def up_to_date(self) -> bool:
        return not (self.changed or self.missing or self.stale)


def is_runtime(path: str) -> bool:
    """Whether a release path belongs to the generated check runtime (see ``RUNTIME_DIR``)."""
    return path.startswith(RUNTIME_DIR)


def compare_release(release: Release, out: Path, runtime: bool = True) -> Comparison:
    """What differs between a generated release and a folder; ``runtime=False`` leaves the
    check runtime out (a fresh clone has none until the first ``release``)."""
    wanted, have = release.encoded(), existing_files(out)
    if not runtime:
        wanted = {p: d for p, d in wanted.items() if not is_runtime(p)}
        have = {p: d for p, d in have.items() if not is_runtime(p)}
    return Comparison(
        changed=sorted(p for p in wanted if p in have and have[p] != wanted[p]),
        missing=sorted(p for p in wanted if p not in have),
        stale=sorted(p for p in have if p not in wanted))


def write_release(release: Release, out: Path) -> Comparison:
    """Write what differs, delete stale files under ``out``; return what was done."""
    diff = compare_release(release, out)
    wanted = release.encoded()
    for rel in diff.changed + diff.missing:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(wanted[rel])
    for rel in diff.stale:
        (out / rel).unlink()
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return diff


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} kB"


def summary(release: Release, out_label: str) -> str:
    data = release.encoded()
    lines = [f"release: {len(release.jobs)} exercises -> {out_label}/"]
    for job in release.jobs:
        folder = job.exercise.folder
        lines.append(f"  {folder}/")
        order = [job.exercise.filename, f"{folder}.ipynb", "README.md"]
        for rel in sorted(job.files, key=lambda r: (order.index(r) if r in order else 9, r)):
            note = job.notes.get(rel, "public test" if rel in job.public else "")
            size = _size(len(data[f"{folder}/{rel}"]))
            lines.append(f"    {rel:<28} {size:>9}  {note}".rstrip())
        if not job.public:
            lines.append("    tests/                       (no public tests yet)")
    lines.append(f"  {'README.md':<30} {_size(len(data['README.md'])):>9}  overview")
    runtime = [p for p in data if p.startswith("autograder/")]
    if runtime:
        lines.append(f"  {'autograder/':<30} {_size(sum(len(data[p]) for p in runtime)):>9}  "
                     f"student runtime for `python -m autograder check` ({len(runtime)} files)")
    total = sum(len(b) for b in data.values())
    lines.append(f"  {len(data)} files, {_size(total)}")
    return "\n".join(lines)


def main(args: argparse.Namespace | None = None) -> int:
    """Entry point of ``python -m autograder release [--check] [--root R] [--out DIR]``."""
    root = Path(getattr(args, "root", None) or repo_root()).resolve()
    out = Path(getattr(args, "out", None) or root / "assignments").resolve()
    try:
        label = str(out.relative_to(Path.cwd()))
    except ValueError:
        label = str(out)
    try:
        release = build_release(root)                 # `release` has no --exercises: all of them
    except ReleaseError as exc:
        print(f"release failed: {exc}", file=sys.stderr)
        return 2

    if getattr(args, "check", False):
        diff = compare_release(release, out, runtime=False)
        if diff.up_to_date:
            print(f"{label}/ is up to date ({len(release.files)} files)")
            return 0
        print(f"{label}/ is out of date with solutions/:")
        for kind, paths in (("changed", diff.changed), ("missing", diff.missing),
                            ("stale", diff.stale)):
            for rel in paths:
                print(f"  {kind:<8} {label}/{rel}")
        print("run `python -m autograder release` to regenerate it")
        return 1

    diff = write_release(release, out)
    print(summary(release, label))
    print(f"  written: {len(diff.changed) + len(diff.missing)} "
          f"({len(diff.missing)} new, {len(diff.changed)} changed), "
          f"unchanged: {len(release.files) - len(diff.changed) - len(diff.missing)}, "
          f"stale removed: {len(diff.stale)}")
    return 0
