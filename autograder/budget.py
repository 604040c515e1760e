"""Time budgets per exercise, and no waiting twice for the same hanging function.

Each exercise gets a wall-clock budget (seconds) for all of its tests. :class:`Budgets`
holds the clocks; :class:`BudgetedSandbox` stands between the tests' ``Remote`` handles and
the real :class:`~autograder.sandbox.Sandbox`:

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
from typing import Any

from autograder.sandbox.errors import StudentError, WorkerCrashed

DEFAULT_BUDGET_S = 70.0       # per exercise: 5 x 70 s = 350 s, well under run_autograder's 480 s (imports, start-up)
_MAX_REF_SCAN = 200           # encoded arguments inspected for student references


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


class BudgetedSandbox:
    """A :class:`~autograder.sandbox.Sandbox` whose requests respect :class:`Budgets`.

    Everything but ``request`` is the wrapped sandbox's (``generation``, ``load_errors``, …).
    """

    def __init__(self, sandbox: Any, budgets: Budgets):
        object.__setattr__(self, "_inner", sandbox)
        object.__setattr__(self, "_budgets", budgets)
        object.__setattr__(self, "_types", {})      # (generation, handle id) -> type name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def request(self, header: dict, buffers: list[bytes], module: str | None = None) -> tuple[dict, list[bytes]]:
        inner, budgets = self._inner, self._budgets
        exercise = budgets.current
        if module is not None and module in inner.load_errors:
            return inner.request(header, buffers, module=module)     # raises ExerciseUnavailable
        key, label = call_key(header, self._type_of)
        hung = budgets.hung.setdefault(exercise, {}) if exercise else {}
        if key is not None and key in hung:
            raise EarlierTimeout(f"this call was not made: {hung[key]} did not finish in an earlier "
                                 "test, so it is not waited for again (look for an infinite loop "
                                 "or code that is far too slow)")
        budgets.check(exercise)
        limit = inner.config.call_timeout
        remaining = budgets.remaining(exercise)
        try:
            reply = inner.request(header, buffers, module=module, timeout=min(limit, max(remaining, 0.001)))
            self._remember_types(reply[0].get("ok") if isinstance(reply[0], dict) else None)
            return reply
        except WorkerCrashed as crash:
            if crash.kind != "timeout":
                raise
            if remaining < limit and exercise is not None:       # the budget ran out, not the call limit
                budgets.spent_at.setdefault(exercise, budgets.elapsed(exercise))
                raise BudgetSpent(budgets.spent_message(exercise).replace(
                    "this test did not run", "this test was stopped")) from None
            if key is not None:
                hung[key] = label
            raise

    def _type_of(self, handle: str) -> str:
        return self._types.get((self._inner.generation, handle), "object")

    def _remember_types(self, node: Any) -> None:
        """Handles in a reply and their types, so calls on them can be named and keyed."""
        if len(self._types) > 50_000:
            self._types.clear()
        for item in _nodes(node):
            if isinstance(item.get("H"), str) and isinstance(item.get("type"), str):
                self._types[(self._inner.generation, item["H"])] = item["type"][:80]


def call_key(header: dict, type_of: Any = lambda handle: "object") -> tuple[tuple | None, str]:
    """What counts as "the same function" for a request, and how to name it to the student.

    Module attributes by their path (``attention.softmax``); calls on objects the student's
    code returned by the call's path (the object itself, or a method name), whatever the
    object; kit helpers (``support.…``) together with the student references they are given.
    Only calls are keyed (``getattr`` reads are not).
    """
    if header.get("op") != "call":
        return None, ""
    target = header.get("target") if isinstance(header.get("target"), dict) else {}
    root, path = _describe_ref(target, type_of)
    refs = tuple(sorted({_describe_ref(r, type_of)[1] for r in _nodes([header.get("args"), header.get("kwargs")])
                         if "R" in r and str(r.get("R")) != "support"}))
    if root == "support":
        if not refs:
            return None, ""           # the kit's own helper on plain data: not the student's code
        return ("support", path, refs), f"{path} (given {', '.join(refs)})"
    return (root, path), path


def _describe_ref(ref: dict, type_of: Any) -> tuple[str, str]:
    key = str(ref.get("R", ""))
    parts = [str(p) for p in (ref.get("path") or []) if isinstance(p, str)][:8]
    if key.startswith("m:"):
        return "module", ".".join([key[2:], *parts])
    if key == "support":
        return "support", ".".join(["support", *parts])
    return "object", ".".join([f"a {type_of(key)} object", *(parts or ["__call__"])])


def _nodes(tree: Any) -> list[dict]:
    """The dicts inside an encoded tree (bounded walk: at most _MAX_REF_SCAN items)."""
    found: list[dict] = []
    stack, budget = [tree], _MAX_REF_SCAN
    while stack and budget > 0:
        item = stack.pop()
        budget -= 1
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
