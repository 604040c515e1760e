"""Time budgets per exercise, and no waiting twice for the same hanging function.

Each exercise gets a wall-clock budget (seconds) for all of its tests. :class:`Budgets`
holds the clocks; :class:`Budgeted` is middleware between the tests' ``Remote`` handles and
the :class:`~autograder.sandbox.Sandbox` (both are a ``Channel``):

* a call into the worker may take at most ``min(call_timeout, what is left of the budget)``;
  once the budget is spent, every further call (and test) of that exercise fails at once
  with :class:`BudgetSpent`, while the other exercises are graded normally;
* after a call timed out, further calls of the same function (same module attribute, the
  same kind of call on an object the student's code returned, or the same kit helper called
  with the same student function) fail at once with :class:`EarlierTimeout`, instead of
  costing another full call timeout each.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from autograder.sandbox import protocol
from autograder.sandbox.errors import ExerciseUnavailable, StudentError, WorkerCrashed
from autograder.sandbox.protocol import ErrorKind
from autograder.sandbox.session import Channel

DEFAULT_BUDGET_S = 70.0       # per exercise: 5 x (70 s + a 20 s import) = 450 s, under run_autograder's 480 s
                              # (a build of more exercises gives each less: gradescope.exercise_budget)


class BudgetSpent(StudentError):
    """The exercise's time budget is used up: this test (or call) did not run."""


class EarlierTimeout(StudentError):
    """The same function already ran out of time in an earlier call: not waited for again."""


@dataclass
class Budgets:
    """Per-exercise budgets (seconds) and the clock of the exercise being graded."""
    seconds: dict[str, float] = field(default_factory=dict)
    default: float = DEFAULT_BUDGET_S
    current: str | None = None
    started: dict[str, float] = field(default_factory=dict)
    spent_at: dict[str, float] = field(default_factory=dict)    # exercise -> elapsed when it ran out
    hung: dict[str, dict[tuple, str]] = field(default_factory=dict)   # exercise -> call key -> label

    def budget(self, exercise: str) -> float:
        return float(self.seconds.get(exercise, self.default))

    def enter(self, exercise: str) -> None:
        """The exercise whose tests run from now on (its clock starts at its first test)."""
        self.current = exercise
        self.started.setdefault(exercise, time.monotonic())

    def elapsed(self, exercise: str) -> float:
        start = self.started.get(exercise)
        return 0.0 if start is None else time.monotonic() - start

    def remaining(self, exercise: str | None = None) -> float:
        exercise = exercise or self.current
        if exercise is None:
            return float("inf")
        return self.budget(exercise) - self.elapsed(exercise)

    def out_of_time(self, exercise: str) -> bool:
        return exercise in self.spent_at

    def check(self, exercise: str | None = None) -> None:
        """Raise :class:`BudgetSpent` when the exercise has no time left."""
        exercise = exercise or self.current
        if exercise is None:
            return
        if exercise not in self.spent_at and self.remaining(exercise) <= 0:
            self.spent_at[exercise] = self.elapsed(exercise)
        if exercise in self.spent_at:
            raise BudgetSpent(self.spent_message(exercise))

    def spent_message(self, exercise: str) -> str:
        return (f"the time budget for {exercise} ({self.budget(exercise):g} s for all of its tests) "
                "is used up; this test did not run. Earlier tests of this exercise kept their "
                "results; look for code that is very slow or never finishes")


class Budgeted:
    """Middleware between the tests' proxies and a sandbox: every request respects
    :class:`Budgets` (a :class:`~autograder.sandbox.session.Channel` in front of another)."""

    def __init__(self, inner: Channel, budgets: Budgets, call_timeout: float):
        self._inner, self._budgets, self._call_timeout = inner, budgets, call_timeout

    @property
    def generation(self) -> int:
        return self._inner.generation

    def load_error(self, module: str) -> protocol.WorkerError | None:
        return self._inner.load_error(module)

    def unavailable(self, module: str) -> ExerciseUnavailable | None:
        return self._inner.unavailable(module)

    def discard_worker(self) -> None:
        self._inner.discard_worker()

    def request(self, request: protocol.Request, module: str | None = None) -> protocol.Reply:
        inner, budgets = self._inner, self._budgets
        exercise = budgets.current
        if module is not None and inner.load_error(module) is not None:
            return inner.request(request, module=module)            # raises ExerciseUnavailable
        key, label = call_key(request)
        hung = budgets.hung.setdefault(exercise, {}) if exercise else {}
        if key is not None and key in hung:
            raise EarlierTimeout(f"this call was not made: {hung[key]} did not finish in an earlier "
                                 "test, so it is not waited for again (look for an infinite loop "
                                 "or code that is far too slow)")
        budgets.check(exercise)
        remaining = budgets.remaining(exercise)
        try:
            return inner.request(request, module=module,
                                 timeout=min(self._call_timeout, max(remaining, 0.001)))
        except WorkerCrashed as crash:
            if crash.kind is not ErrorKind.TIMEOUT:
                raise
            if remaining < self._call_timeout and exercise is not None:   # the budget ran out, not the call limit
                budgets.spent_at.setdefault(exercise, budgets.elapsed(exercise))
                raise BudgetSpent(budgets.spent_message(exercise).replace(
                    "this test did not run", "this test was stopped")) from None
            if key is not None:
                hung[key] = label
            raise


def call_key(request: protocol.Request) -> tuple[tuple | None, str]:
    """What counts as "the same function" for a request, and how to name it to the student.

    Module attributes by their path (``attention.softmax``); calls on objects the student's
    code returned by the call's path (the object itself, or a method name), whatever the
    object; kit helpers (``support.…``) together with the student references they are given.
    Only calls are keyed (``getattr`` reads are not).
    """
    if not isinstance(request, protocol.Call):
        return None, ""
    target = request.target
    path = target.describe()
    given = tuple(sorted({ref.describe() for ref in request.refs if ref.kind is not protocol.RefKind.SUPPORT}))
    if target.kind is protocol.RefKind.SUPPORT:
        if not given:
            return None, ""           # the kit's own helper on plain data: not the student's code
        return ("support", path, given), f"{path} (given {', '.join(given)})"
    return (target.kind.value, path), path
