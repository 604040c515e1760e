"""NumPy-only functions kept to NumPy at run time: the worker's half of the "no torch inside
the NumPy functions" rule (the static half reads the source: ``intake/banned.py``).

The static rule finds torch spelt out in those functions and their helpers; it cannot follow
``_T = __import__("to" + "rch")`` at the top of the file. So, after a student file of an
exercise with NumPy-only functions (``Exercise.numpy_only``) is loaded, each of them is
replaced in the module by a wrapper that runs it under a torch dispatch mode
(:class:`_NoTorch`). Any torch operation made while it runs, by student code (the first frame
outside torch's own package is not a library's: a student file, or code it made), is refused
with :class:`~autograder.sandbox.guards.BannedAPIError` and recorded (the request fails even
if the student's code caught the error). The kit's own code called back from it (the ``f``
handed to ``numerical_gradient``) is not judged.

The mode is entered only when the function is called from outside the student's code (a
hidden test): a NumPy function the student's torch function calls on tensors is judged by
that function's tests, not by this rule. Correct code pays one mode switch per call.
What it does not stop: code that pops torch's mode stack before using torch.
"""
from __future__ import annotations

import functools
import os
import sys
import types
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.sandbox import lazy_dynamo, trust
from autograder.sandbox.guards import BannedAPIError

# frames between an operation and the code that made it: torch's Python layers, and the kit's
# stand-in for torch._dynamo (which wraps every __torch_dispatch__)
_PLUMBING = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
             os.path.abspath(lazy_dynamo.__file__), os.path.abspath(__file__))


class NumpyOnlyGuard:
    """Per worker: wraps the NumPy-only functions of loaded student files."""

    def __init__(self, on_refusal: Callable[[str], None]) -> None:
        self._on_refusal = on_refusal
        self._active = False

    def wrap(self, module: types.ModuleType, filename: str, names: tuple[str, ...]) -> None:
        """Replace ``module``'s functions ``names`` defined in ``filename`` by guarded ones."""
        for name in names:
            function = module.__dict__.get(name)
            if isinstance(function, types.FunctionType) and function.__code__.co_filename == filename:
                module.__dict__[name] = self._guarded(function, name)

    def _guarded(self, function: types.FunctionType, name: str) -> Callable[..., Any]:
        guard = self

        @functools.wraps(function)
        def numpy_only(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename
            if guard._active or not trust.is_library_file(caller):      # called by student code
                return function(*args, **kwargs)
            guard._active = True
            try:
                with _NoTorch(guard, name):
                    return function(*args, **kwargs)
            finally:
                guard._active = False

        return numpy_only

    def refuse(self, name: str, op: str, frame: Any) -> None:
        where = f"{os.path.basename(frame.f_code.co_filename)} line {frame.f_lineno}"
        message = (f"{name} must use NumPy only (no torch), but torch's {op} ran inside it "
                   f"(called from {where})")
        self._on_refusal(message)
        raise BannedAPIError(message)


class _NoTorch(TorchDispatchMode):
    """Every torch operation while a NumPy-only function runs: refused when student code made it."""

    def __init__(self, guard: NumpyOnlyGuard, name: str) -> None:
        super().__init__()
        self._guard, self._name = guard, name

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):     # noqa: A002 - torch's names
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(_PLUMBING):
            frame = frame.f_back
        if frame is not None and not trust.is_library_file(frame.f_code.co_filename):
            self._guard.refuse(self._name, str(func), frame)
        return func(*args, **(kwargs or {}))
