"""Banned APIs refused at the operator level: the backstop behind ``guards.BanGuards``.

``guards.BanGuards`` replaces the banned Python names (``F.scaled_dot_product_attention``
in every module that binds it) and so gives the best message, but the same computation has
other doors: ``torch.ops.aten.scaled_dot_product_attention``, ``torch._C._nn.…``,
``torch._scaled_dot_product_flash_attention_for_cpu``, a guard's closure, C++. Every one of
them ends in a call of an aten operator through PyTorch's dispatcher. This module puts a
Python kernel for each operator that implements a banned API
(``contract.BANNED_OPERATORS``) at the dispatch key ``PreDispatch``, which every other
operator falls through and which is switched on (thread-locally) only while the worker
answers a request (:meth:`OperatorGuard.watching`) and, for good, in every thread started
after the worker's set-up (:func:`guard_new_threads`: ``threading``, thread pools and
``_thread``; forked children inherit the forking thread's), which is judged with the code that
started it (:mod:`~autograder.sandbox.threads`). So:

* ops that are not banned cost nothing (no Python per op, unlike a ``TorchDispatchMode``);
* the kernel sees composite operators (``aten::scaled_dot_product_attention``) *before*
  they decompose into matmul and softmax, at any call depth, from Python or C++;
* it refuses the op (:class:`~autograder.sandbox.guards.BannedAPIError`) when the Python
  stack holds code of a student file whose exercise bans it, or student-made code of no
  known file (``exec``/``compile`` with an invented name: all loaded exercises' bans apply);
  otherwise (the kit's support code, an exercise without that ban) it runs the op as usual;
* a refusal is also recorded: the request fails even if the student's code caught the
  error (:meth:`OperatorGuard.watching` raises on the way out).

What it cannot see is listed in ``docs/ARCHITECTURE.md`` ("Banned APIs: three layers (and NumPy only)").
"""
from __future__ import annotations

import contextlib
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Iterator

import torch

from autograder.sandbox import threads, trust
from autograder.sandbox.guards import BannedAPIError

_KEY = torch._C.DispatchKey.PreDispatch


@dataclass(frozen=True)
class Violation:
    """One banned operator reached from student code."""
    exercise: str                # "ex5"
    api: str                     # "torch.nn.functional.scaled_dot_product_attention"
    op: str                      # "aten::scaled_dot_product_attention"
    where: str                   # "lstm_vs_attention.py line 152" or ""

    def message(self) -> str:
        short = self.api.rsplit(".", 1)[-1]
        where = f", called from {self.where}" if self.where else ""
        return (f"{self.exercise} forbids {short} ({self.api}; found at the operator level: "
                f"{self.op}{where}). Write this part with matrix products and a softmax yourself")


def guard_new_threads() -> None:
    """Every thread started from now on runs with the guard's dispatch key included, and
    remembers who started it (:mod:`~autograder.sandbox.threads`): a banned operator reached
    from a thread student code started is judged as that student code."""
    threads.run_in_every_thread(lambda: torch._C._IncludeDispatchKeyGuard(_KEY))
    threads.install()


class OperatorGuard:
    """Per worker: which student file bans which operator, the kernels, the violations."""

    def __init__(self, strict: bool = False) -> None:
        self._files: dict[str, dict[str, tuple[str, str]]] = {}   # op -> {filename: (exercise, api)}
        self._exercises: dict[str, str] = {}                        # student filename -> exercise id
        self._scoped: set[str] = set()            # files whose ban covers part of them only
        # a worker: a banned operator with no student file on the stack is the student's too
        # (neither the kit nor a library runs one there of its own accord)
        self.strict = strict
        self._library: Any = None
        self._installed: set[str] = set()
        self._violations: list[str] = []          # messages of this request's refusals

    # -- set-up (before the student file's code runs)
    def ban(self, filename: str, exercise: str, operators: dict[str, str], scoped: bool = False) -> None:
        """``filename`` (a student file of ``exercise``) may not reach ``operators``
        (``aten name -> banned API``; ``scoped``: only from the part of the file its scope probe
        names); kernels are installed once per operator."""
        self._exercises[filename] = exercise
        if scoped:
            self._scoped.add(filename)
        for op, api in operators.items():
            if self._install(op):
                self._files.setdefault(op, {})[filename] = (exercise, api)

    def _install(self, op: str) -> bool:
        if op in self._installed:
            return True
        try:
            packet = getattr(torch.ops.aten, op)
        except (AttributeError, RuntimeError):
            return False                  # not in this torch: nothing to guard
        if self._library is None:
            self._library = torch.library.Library("aten", "IMPL")
        for overload in packet.overloads():
            self._library.impl(f"{op}.{overload}" if overload != "default" else op,
                               self._kernel(op, getattr(packet, overload)), "PreDispatch")
        self._installed.add(op)
        return True

    def _kernel(self, op: str, overload: Any) -> Callable:
        excluded = torch._C.DispatchKeySet(_KEY)

        def kernel(*args: Any, **kwargs: Any) -> Any:
            violation = self._judge(op, sys._getframe(1))
            if violation is not None:
                self.record(violation.message())
                raise BannedAPIError(violation.message())
            with torch._C._ExcludeDispatchKeyGuard(excluded):
                return overload(*args, **kwargs)

        return kernel

    # -- the decision, only ever made for a banned operator
    def _judge(self, op: str, frame: FrameType | None) -> Violation | None:
        banning = self._files.get(op, {})
        if not banning:
            return None
        # the code the request ran (frames below the request's own never count), and, in a
        # thread, the code that started it: threads.culprit
        blamed = threads.culprit(frame, banning, self._exercises, self._scoped, strict=self.strict)
        if blamed is None:
            return None
        exercise, api = banning.get(blamed.filename) or sorted(banning.values())[0]
        where = (f"{blamed.filename} line {blamed.line}" if blamed is not threads.AFTER_RETURN
                 else "code that ran after your function returned, when the grader read its result")
        return Violation(exercise, api, f"aten::{op}", where)

    # -- one request
    def record(self, message: str) -> None:
        """A refusal by another layer (``guards.BanGuards``): the request fails too."""
        self._violations.append(message)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Banned operators refused while the body runs; if any was refused (even with the
        error caught by the student's code), leaving raises :class:`BannedAPIError`."""
        self._violations.clear()
        stop = sys._getframe(1)
        while stop is not None and stop.f_code.co_filename == contextlib.__file__:
            stop = stop.f_back
        try:
            # frames below the request's (the worker's loop, a bootstrap) never count
            with threads.request_boundary(stop), torch._C._IncludeDispatchKeyGuard(_KEY):
                yield
        finally:
            if self._violations:
                first = self._violations[0]
                self._violations.clear()
                raise BannedAPIError(first)
