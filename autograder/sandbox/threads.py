"""Threads in a worker: who started each one, and the guards every one runs under.

The banned-API layers judge an operation by the code on its thread's stack. A thread's stack
starts at its bootstrap (``threading``, ``concurrent.futures``: library files), so work that
student code hands to a thread (``ThreadPoolExecutor(1).submit(op, q, k, v).result()``) would
carry no student frame. :func:`install` makes every thread started from then on (through
``threading``, thread pools or ``_thread``) remember its **origin**, the code that started it:
the student's code on the starting thread's stack (every frame that is not a library's,
outermost included) and that thread's own origin. The
guards read a thread's stack and then its origin (:func:`calling_code`), so a thread started
by student code is judged as that student code.

It also runs each new thread inside the context managers registered with :func:`run_in_every_thread`
(the operator guard's dispatch key; the NumPy-only watch), which are thread-local in torch.
Forked children keep the forking thread's state. Threads started by C code the student loads
(``ctypes``) are not seen: see ``docs/ARCHITECTURE.md``.
"""
from __future__ import annotations

import _thread
import contextlib
import sys
import threading
from types import FrameType
from typing import Any, Callable, ContextManager, Iterator

from autograder.sandbox import trust

MAX_ORIGIN_FRAMES = 256            # a thread's origin keeps at most this many code locations

Location = tuple[str, int]         # (a code object's file name, the line running)

_local = threading.local()
_contexts: list[Callable[[], ContextManager[Any]]] = []
_installed = False


def origin() -> tuple[Location, ...]:
    """The code that started the current thread, innermost first (empty: the main thread, or
    a thread started before :func:`install`)."""
    return getattr(_local, "origin", ())


@contextlib.contextmanager
def request_boundary(frame: FrameType | None) -> Iterator[None]:
    """While the body runs, this thread's code is read from a frame outwards up to ``frame``
    (the one answering a request), not included: what lies below it is the worker's."""
    saved = getattr(_local, "boundary", None)
    _local.boundary = frame
    try:
        yield
    finally:
        _local.boundary = saved


def calling_code(frame: FrameType | None) -> Iterator[Location]:
    """The code ``frame`` is running for, innermost first: its thread's frames from ``frame``
    outwards (up to the thread's request boundary, not included, when it is met), then the
    thread's origin."""
    stop = getattr(_local, "boundary", None)
    while frame is not None and frame is not stop:
        yield frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    yield from origin()


def run_in_every_thread(context: Callable[[], ContextManager[Any]]) -> None:
    """Every thread started after :func:`install` runs inside ``context()`` (made in that thread)."""
    _contexts.append(context)


def install() -> None:
    """From now on, every new thread records its origin and runs in the registered contexts."""
    global _installed
    if _installed:
        return
    _installed = True
    for owner, name in ((threading, "_start_new_thread"), (threading, "_start_joinable_thread"),
                        (_thread, "start_new_thread"), (_thread, "start_new")):
        original = getattr(owner, name, None)
        if original is not None:
            setattr(owner, name, _starting(original))


def _starting(start: Callable[..., Any]) -> Callable[..., Any]:
    """``start`` (a thread-starting function whose first argument is the thread's function),
    its function run with the starter's origin and in the registered contexts."""
    def start_thread(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        started_by = _here(sys._getframe(1))

        def run(*a: Any, **k: Any) -> Any:
            _local.origin = started_by
            with contextlib.ExitStack() as stack:
                for context in list(_contexts):
                    stack.enter_context(context())
                return function(*a, **k)

        return start(run, *args, **kwargs)

    return start_thread


def _here(frame: FrameType | None) -> tuple[Location, ...]:
    """The code that is not a library's at ``frame`` and outwards, then in the starting
    thread's own origin (the guards skip library code: only the rest can be judged)."""
    found: list[Location] = []
    for location in calling_code(frame):
        if not trust.is_library_file(location[0]):
            found.append(location)
            if len(found) >= MAX_ORIGIN_FRAMES:
                break
    return tuple(found)
