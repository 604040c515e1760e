"""Originals out of reach: a patched function that must still call what it replaced.

The worker replaces functions student code must not use as they are: a banned API by a
guard (``guards``), the built-in thread start by one that starts guarded threads
(``threads``), the built-in-module maker by one that refuses a second ``_thread``. Each
replacement calls the original. Held in a closure cell, a default or a global, the original is
a plain attribute read away (``guarded.__closure__[0].cell_contents``), and reading it undoes
the patch: a banned function called unguarded, a thread outside every guard.

:func:`seal` keeps the original in the frame of a generator instead. Python reaches a
generator's frame only through audited routes (``gi_frame``, ``gc.get_referents``), which the
audit hook installed here refuses for these generators, whoever asks: the kit never reads
them. The hook knows a holder by its code's name, not by a list the other code could
empty. Whoever sends to a generator gets ``through(original, ...)``, never the original alone.
A small pool of generators per sealed function lets calls nest (a built-in module whose
initialisation imports another) and run in several threads at once.
"""
from __future__ import annotations

import _thread
import sys
from typing import Any, Callable, Iterator

POOL = 8                     # generators per sealed function: calls nested or concurrent this deep
CALLER_DEPTH = 3             # sys._getframe(CALLER_DEPTH) in ``through``: the code that called the
                             # sealed function (0 ``through``, 1 the holder, 2 the sealed call)
_hooked = False


def seal(original: Callable[..., Any], through: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling ``through(original, *args, **kwargs)`` with ``original`` out of reach."""
    _install_hook()
    free = []
    for _ in range(POOL):
        holder = _sealed_holder(original, through)
        next(holder)
        free.append(holder)
    lock = _thread.allocate_lock()                       # guards the free list only

    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            if not free:
                raise RuntimeError(f"more than {POOL} nested or concurrent calls of a sealed function")
            holder = free.pop()
        try:
            result, error = holder.send((args, kwargs))
        finally:
            with lock:
                free.append(holder)
        if error is not None:
            raise error
        return result

    return call


def _sealed_holder(original: Callable[..., Any], through: Callable[..., Any]) -> Iterator[tuple[Any, BaseException | None]]:
    """Sent ``(args, kwargs)``: yields ``(through(original, *args, **kwargs), None)``, or
    ``(None, the exception)``."""
    request = yield None, None
    while True:
        args, kwargs = request
        try:
            outcome: tuple[Any, BaseException | None] = (through(original, *args, **kwargs), None)
        except BaseException as exc:                     # re-raised by the caller, unchanged
            outcome = (None, exc)
        del args, kwargs, request
        request = yield outcome


def _install_hook() -> None:
    global _hooked
    if not _hooked:
        sys.addaudithook(_refuse_holder_frames)
        _hooked = True


def _refuse_holder_frames(event: str, args: tuple) -> None:
    """Audit hook: no code reads a holder's frame, where an original lies. A holder is known
    by its code's name alone, a constant of this function's own code: no global, list or
    built-in the worker's other code could rebind or empty takes part in the decision."""
    if event == "object.__getattr__":
        targets = (args[0],) if args[1] == "gi_frame" else ()
    elif event == "gc.get_referents":
        targets = args[0]
    else:
        return
    for obj in targets:
        try:
            holder = obj.gi_code.co_name == "_sealed_holder"
        except:  # noqa: E722 - no built-in exception's name is looked up (built-ins can be rebound)
            holder = False
        if holder:
            raise PermissionError("reading what holds a function the worker replaced is not allowed")
