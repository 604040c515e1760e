"""What can go wrong on the student's side of the boundary, as grader-side exceptions.

Each carries a message written for the student; none carries grader internals. The worker's
own account of a failure is a typed :class:`~autograder.sandbox.protocol.WorkerError`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from autograder.sandbox.protocol import ErrorKind, WorkerError

if TYPE_CHECKING:
    from autograder.intake.notebooks import CellLine


class StudentError(Exception):
    """The student's code raised, returned something unusable, or its worker failed."""

    def __init__(self, message: str, error: WorkerError | None = None):
        super().__init__(message)
        self.error = error
        self.cause: object | None = None    # the likely mistake, when the suites can name it

    @property
    def student_message(self) -> str:
        return str(self)

    @property
    def raised(self) -> str:
        """The class name of what the student's code raised ("ValueError"), or ""."""
        return self.error.type if self.error is not None else ""


class NotImplementedByStudent(StudentError):
    """The student's function still raises NotImplementedError."""


class UnsupportedValue(StudentError, TypeError):
    """The student returned an object that may not cross the boundary."""


class WorkerCrashed(StudentError):
    """The worker hung (``ErrorKind.TIMEOUT``), ran out of memory or exited during a call
    (``ErrorKind.DIED``)."""

    def __init__(self, kind: ErrorKind, detail: str):
        super().__init__(f"your code {detail}", WorkerError(kind, message=detail))
        self.kind, self.detail = kind, detail


class ExerciseUnavailable(StudentError):
    """The student's module for this exercise is missing or failed to import."""

    def __init__(self, module: str, error: WorkerError, notebook: bool = False,
                 in_cell: CellLine | None = None):
        super().__init__(describe_load_error(module, error, notebook=notebook, in_cell=in_cell), error)
        self.module = module


def describe_error(error: WorkerError, what: str = "your code") -> str:
    """One student-facing paragraph from a worker's error record."""
    if error.kind is ErrorKind.UNENCODABLE:
        return (f"{what} returned {error.message}, which the grader cannot accept: return NumPy arrays, "
                "torch tensors, numbers, strings, lists, tuples, dicts or None as the exercise asks")
    if error.kind is ErrorKind.NOT_IMPLEMENTED:
        return f"{what} is not implemented yet (it raised NotImplementedError)"
    text = f"{what} raised {error.type}: {error.message}" if error.message else f"{what} raised {error.type}"
    if error.where:
        frames = [f"  {f.filename}, line {f.line}, in {f.function}\n    {f.source}".rstrip() for f in error.where]
        text += "\nwhere (most recent call last):\n" + "\n".join(frames)
    return text


def describe_load_error(module: str, error: WorkerError, notebook: bool = False,
                        in_cell: CellLine | None = None) -> str:
    """What went wrong when the worker imported ``module``; ``notebook``: the student handed in
    ``<module>.ipynb``, whose code cells are what was imported; ``in_cell``: where a syntax
    error's line lies in those cells (``notebooks.cell_line``), said instead of the line of
    the cells joined, which the student never sees."""
    filename = f"{module}.ipynb (its code cells, run top to bottom)" if notebook else f"{module}.py"
    if error.kind is ErrorKind.MISSING:
        return error.message or f"{filename} was not found in the submission"
    if error.kind in (ErrorKind.TIMEOUT, ErrorKind.DIED):
        advice = (": every code cell runs when the notebook is graded, so a long demo or training run "
                  "at the top level counts against the import's time" if notebook and error.kind is ErrorKind.TIMEOUT
                  else "")
        return f"importing {filename} failed: your code {error.message}{advice}"
    if error.is_syntax_error:
        where = (f"in the code cell that begins `{in_cell.begins}`, on its line {in_cell.line}"
                 if notebook and in_cell is not None else f"on line {error.line}")
        return (f"{filename} has a syntax error {where}: {error.message}"
                + (f"\n    {error.text.rstrip()}" if error.text.strip() else ""))
    return f"importing {filename} failed: " + describe_error(error, what="the module")


def describe_notebook_cell_error(notebook: str, error: WorkerError) -> str:
    """A notebook one of whose code cells raised when graded: where, and what that means (the
    cell ended there; the other cells ran, as nbgrader runs a notebook)."""
    cell_lines = [f for f in error.where if f.function == "<module>" and f.source.strip()]
    where = f" at `{cell_lines[-1].source.strip()}`" if cell_lines else ""     # the cell's own statement
    raised = f"{error.type}: {error.message}" if error.message else error.type
    return (f"{notebook}: a code cell raised {raised}{where}; that cell stopped there and the "
            "other cells ran (as nbgrader runs a notebook): what they define was graded")


class SandboxStartError(RuntimeError):
    """The worker could not be set up: a problem of the grading machine, not the student."""


class SandboxUnavailable(Exception):
    """A test needed the sandbox, and it could not start (a :class:`SandboxStartError`, met
    once and remembered by the :class:`~autograder.sandbox.session.Sandbox`): the test did not
    run. Its message is for the student, and says whose problem it is."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

    @property
    def student_message(self) -> str:
        return ("this test did not run: the autograder could not start the sandbox that runs your "
                "code. This is not a problem with your code; please tell course staff. "
                f"(The autograder said: {self.reason})")
