"""NumPy-only functions kept to NumPy at run time: the worker's half of the "no torch inside
the NumPy functions" rule (the static half reads the source: ``intake/banned.py``).

The static rule finds torch spelt out in those functions and their helpers; it cannot follow
``_T = __import__("to" + "rch")`` at the top of the file. So, after a student file of an
exercise with NumPy-only functions (``Exercise.numpy_only``) is loaded, whatever callable each
of those names is bound to (a function, a ``functools.partial``, a torch builtin) is replaced
in the module by a wrapper that runs it under a torch dispatch mode (:class:`_NoTorch`): every
torch operation made while it runs is refused with
:class:`~autograder.sandbox.guards.BannedAPIError` and recorded (the request fails even if
the student's code caught the error). The kit hands these functions nothing that uses torch
(``numerical_gradient``'s ``f`` is NumPy: ``support/functions.py``), so no operation is
exempt. Torch keeps dispatch modes per thread, so every thread started in the worker runs
under the same mode for good: it refuses only while a NumPy-only function runs
(:mod:`~autograder.sandbox.threads`). What the function returns is made plain data before the
mode ends (:func:`plain`: the real items of a tuple or list subclass, an array subclass as an
array), so no work is left for later, outside the mode, in an overridden ``__iter__`` or
``__getitem__``.

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
from types import FrameType
from typing import Any, Callable

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.sandbox import lazy_dynamo, trust
from autograder.sandbox.guards import BannedAPIError

# frames between an operation and the code that made it: torch's Python layers, and the kit's
# stand-in for torch._dynamo (which wraps every __torch_dispatch__)
_PLUMBING = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, os.path.abspath(lazy_dynamo.__file__))
_THIS_FILE = os.path.abspath(__file__)
MAX_PLAIN_DEPTH = 32                  # nesting a result is made plain to (deeper: left as it is)


class NumpyOnlyGuard:
    """Per worker: wraps the NumPy-only functions of loaded student files."""

    def __init__(self, on_refusal: Callable[[str], None]) -> None:
        self._on_refusal = on_refusal
        self._active = False                  # a NumPy-only function called by a test is running
        self._active_name = ""

    def wrap(self, module: types.ModuleType, names: tuple[str, ...]) -> None:
        """Replace whatever callables ``module``'s ``names`` are bound to by guarded ones."""
        for name in names:
            bound = module.__dict__.get(name)
            if bound is None:                # handed out by a module __getattr__: bound here,
                try:                         # guarded, the name never reaches __getattr__ again
                    bound = types.ModuleType.__getattribute__(module, name)
                except Exception:
                    continue
            if callable(bound):
                module.__dict__[name] = self._guarded(bound, name)

    def thread_watch(self) -> TorchDispatchMode:
        """The mode every new thread of the worker runs under (``threads.run_in_every_thread``)."""
        return _NoTorch(self)

    def _guarded(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        guard = self

        def numpy_only(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename
            if guard._active or not trust.is_library_file(caller):      # called by student code
                return function(*args, **kwargs)
            guard._active, guard._active_name = True, name
            try:
                with _NoTorch(guard):
                    return plain(function(*args, **kwargs))
            finally:
                guard._active = False

        functools.update_wrapper(numpy_only, function)      # what a partial lacks is left as it is
        if not hasattr(function, "__name__"):
            numpy_only.__name__ = numpy_only.__qualname__ = name
        return numpy_only

    def refuse(self, name: str, op: str, maker: FrameType | None) -> None:
        """Refuse ``op`` made by ``maker`` (None, or this module's wrapper: a callable bound to
        ``name`` that has no Python code of its own, such as a torch builtin)."""
        where = (f"{os.path.basename(maker.f_code.co_filename)} line {maker.f_lineno}"
                 if maker is not None and maker.f_code.co_filename != _THIS_FILE
                 else "a callable without Python code")
        message = (f"{name} must use NumPy only (no torch), but torch's {op} ran inside it "
                   f"(called from {where})")
        self._on_refusal(message)
        raise BannedAPIError(message)


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data, read without the student's overrides: a tuple or list subclass
    becomes a tuple or list of its real items, a dict subclass a dict, an array subclass an
    array (a view); anything else is returned as it is."""
    if depth > MAX_PLAIN_DEPTH:
        return value
    if isinstance(value, np.ndarray):
        return value if type(value) is np.ndarray else np.ndarray.view(value, np.ndarray)
    if isinstance(value, tuple):
        return tuple(plain(item, depth + 1) for item in tuple.__iter__(value))
    if isinstance(value, list):
        return [plain(item, depth + 1) for item in list.__iter__(value)]
    if isinstance(value, dict):
        return {key: plain(item, depth + 1) for key, item in dict.items(value)}
    return value


def _maker(frame: FrameType | None) -> FrameType | None:
    """The frame that made a torch operation: the first outside torch's layers, from ``frame``
    (the caller of ``__torch_dispatch__``) outwards; None when there is none."""
    while frame is not None and frame.f_code.co_filename.startswith(_PLUMBING):
        frame = frame.f_back
    return frame


class _NoTorch(TorchDispatchMode):
    """A thread's torch operations while a NumPy-only function runs: refused. Entered around
    the function in its own thread, and for good in every thread the worker starts."""

    def __init__(self, guard: NumpyOnlyGuard) -> None:
        super().__init__()
        self._guard = guard

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):     # noqa: A002 - torch's names
        if self._guard._active:
            self._guard.refuse(self._guard._active_name, str(func), _maker(sys._getframe(1)))
        return func(*args, **(kwargs or {}))
