"""What can go wrong on the student's side of the boundary, as grader-side exceptions.

Each carries a message written for the student; none carries grader internals.
"""
from __future__ import annotations


class StudentError(Exception):
    """The student's code raised, returned something unusable, or its worker failed."""

    def __init__(self, message: str, info: dict | None = None):
        super().__init__(message)
        self.info = info or {}
        self.cause: str | None = None      # the likely mistake, when the suites can name it

    @property
    def student_message(self) -> str:
        return str(self)


class NotImplementedByStudent(StudentError):
    """The student's function still raises NotImplementedError."""


class UnsupportedValue(StudentError, TypeError):
    """The student returned an object that may not cross the boundary."""


class WorkerCrashed(StudentError):
    """The worker hung, ran out of memory or exited during a call."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"your code {detail}")
        self.kind, self.detail = kind, detail


class ExerciseUnavailable(StudentError):
    """The student's module for this exercise is missing or failed to import."""

    def __init__(self, module: str, info: dict):
        super().__init__(describe_load_error(module, info), info)
        self.module = module


def describe_error(info: dict, what: str = "your code") -> str:
    """One student-facing paragraph from a worker error record."""
    kind, type_name, message = info.get("kind"), info.get("type", ""), info.get("message", "")
    if kind == "unencodable":
        return (f"{what} returned {message}, which the grader cannot accept: return NumPy arrays, "
                "torch tensors, numbers, strings, lists, tuples, dicts or None as the exercise asks")
    if kind == "not_implemented":
        return f"{what} is not implemented yet (it raised NotImplementedError)"
    text = f"{what} raised {type_name}: {message}" if message else f"{what} raised {type_name}"
    where = info.get("where") or []
    if where:
        frames = [f'  {fn}, line {line}, in {name}\n    {src}'.rstrip() for fn, line, name, src in where]
        text += "\nwhere (most recent call last):\n" + "\n".join(frames)
    return text


def describe_load_error(module: str, info: dict) -> str:
    filename = f"{module}.py"
    kind = info.get("kind")
    if kind == "missing":
        return info.get("message") or f"{filename} was not found in the submission"
    if kind in ("timeout", "died"):
        return f"importing {filename} failed: your code {info.get('message', '')}"
    if info.get("type") in ("SyntaxError", "IndentationError", "TabError"):
        text = info.get("text") or ""
        return (f"{filename} has a syntax error on line {info.get('line')}: {info.get('message')}"
                + (f"\n    {text.rstrip()}" if text.strip() else ""))
    return f"importing {filename} failed: " + describe_error(info, what="the module")


class SandboxStartError(RuntimeError):
    """The worker could not be set up: a problem of the grading machine, not the student."""
