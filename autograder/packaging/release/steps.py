"""The release pipeline's steps, in the style of nbgrader's preprocessors: each reads and
updates an :class:`~autograder.packaging.release.model.ExerciseJob`; :data:`DEFAULT_STEPS` is
the order :func:`autograder.packaging.release.build_release` runs them in. Also the notebook
normalisation the steps (and :mod:`autograder.interop.nbgrader`) use."""
from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Sequence

from autograder.packaging.release import entrypoints
from autograder.packaging.release.markers import BEGIN, MarkerError, check_stub, strip_solutions
from autograder.packaging.release.readmes import render_checking, render_rules
from autograder.packaging.release.leaks import find_leaks, notebook_secret
from autograder.packaging.release.model import ExerciseJob, ReleaseError, Secret, Step

RULES_PLACEHOLDER = "<!-- release:rules -->"
# Optional exercise cells put their answer inside a function (``def try_it(): ### BEGIN
# SOLUTION …``): the stub makes it return None, and the cell then prints a reminder instead of
# raising, so that Run All on a correct file never stops at an optional cell.
NOTEBOOK_CODE_STUB = ('# YOUR CODE HERE (optional exercise): return your answer\n'
                      'pass')


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
    :mod:`autograder.packaging.release.entrypoints`. Runs after :class:`ReleaseNotebook` and
    :class:`CopyPublicTests`."""
    name = "AddEntryPoints"

    def __call__(self, job: ExerciseJob) -> None:
        from autograder.packaging.release import student_runtime
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
    suites, the reference or the solutions; see :mod:`autograder.packaging.release.student_runtime`.
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
        from autograder.packaging.release import student_runtime as runtime
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
