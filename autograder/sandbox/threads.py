"""Threads in a worker: who started each one, and the guards every one runs under.

The banned-API layers judge an operation by the code on its thread's stack. A thread's stack
starts at its bootstrap (``threading``, ``concurrent.futures``: library files), so work that
student code hands to a thread (``ThreadPoolExecutor(1).submit(op, q, k, v).result()``) would
carry no student frame. :func:`install` makes every thread started from then on (through
``threading``, thread pools or ``_thread``) remember its **origin**, the code that started it:
the student's code on the starting thread's stack (every frame that is not a library's,
outermost included) and that thread's own origin. The guards read a thread's stack and then
its origin (:func:`calling_code`), so a thread started by student code is judged as that
student code. The unpatched start is out of reach (:mod:`~autograder.sandbox.sealed`), and a
second copy of the ``_thread`` module, whose ``start_new_thread`` would be the unpatched one,
cannot be made.

It also runs each new thread inside the context managers registered with
:func:`run_in_every_thread` (the operator guard's dispatch key; the NumPy-only watch), which
are thread-local in torch. Forked children keep the forking thread's state.

Where the contract scopes a ban to part of a file (ex5: "in ``AttentionClassifier``"), a
*scope probe* registered for that file (:func:`set_scope_probe`) says whether one of its
frames runs that part; each location the guards read carries that answer (for a thread's
origin, the answer when it started). Threads started by C code the student loads
(``ctypes``) are not seen: see ``docs/ARCHITECTURE.md``.
"""
from __future__ import annotations

import _thread
import contextlib
import sys
import threading
from types import FrameType
from typing import Any, Callable, Collection, ContextManager, Iterator, NamedTuple

from autograder.sandbox import sealed, trust

MAX_ORIGIN_FRAMES = 256            # a thread's origin keeps at most this many code locations


class Location(NamedTuple):
    """One piece of code the guards judge: a frame, or a frame that started the thread."""
    filename: str                  # its code object's file name
    line: int
    in_scope: bool                 # its file's scope probe says it runs the banned-in part


_local = threading.local()
_contexts: list[Callable[[], ContextManager[Any]]] = []
_probes: dict[str, Callable[[FrameType], bool]] = {}
_installed = False


class ThreadRefused(ImportError):
    """A way to start threads past the worker's thread patching was refused."""


def origin() -> tuple[Location, ...]:
    """The code that started the current thread, innermost first (empty: the main thread, or
    a thread started before :func:`install`)."""
    return getattr(_local, "origin", ())


def set_scope_probe(filename: str, probe: Callable[[FrameType], bool]) -> None:
    """``probe(frame)`` (a frame of ``filename``): whether it runs the part of the file a
    scoped ban covers."""
    _probes[filename] = probe


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


def answering() -> bool:
    """This thread answers a request (inside :func:`request_boundary`) or was started after
    :func:`install` by code that may be the student's."""
    return getattr(_local, "boundary", None) is not None or bool(origin())


def calling_code(frame: FrameType | None) -> Iterator[Location]:
    """The code ``frame`` is running for, innermost first: its thread's frames from ``frame``
    outwards (up to the thread's request boundary, not included, when it is met), then the
    thread's origin."""
    stop = getattr(_local, "boundary", None)
    while frame is not None and frame is not stop:
        yield _location(frame)
        frame = frame.f_back
    yield from origin()


def _location(frame: FrameType) -> Location:
    filename = frame.f_code.co_filename
    probe = _probes.get(filename)
    return Location(filename, frame.f_lineno, bool(probe is not None and probe(frame)))


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
    _one_copy_of_thread()


def _run_in_thread(function: Callable[..., Any], started_by: tuple[Location, ...]) -> Callable[..., Any]:
    def run(*a: Any, **k: Any) -> Any:
        _local.origin = started_by
        with contextlib.ExitStack() as stack:
            for context in list(_contexts):
                stack.enter_context(context())
            return function(*a, **k)
    return run


ONE_COPY = frozenset({"_thread", "_imp"})     # built-in modules never made again in a worker


def _one_copy_of_thread() -> None:
    """A second copy of the built-in ``_thread`` module would hold the unpatched
    ``start_new_thread`` (``importlib.util.module_from_spec(find_spec("_thread"))``, or
    ``_thread`` dropped from ``sys.modules`` and imported again): making one is refused, and
    so is a second ``_imp``, which makes built-in modules."""
    import _imp

    _imp.create_builtin = sealed.seal(_imp.create_builtin, _create_one_copy)


def _create_one_copy(create: Callable[[Any], Any], spec: Any) -> Any:
    if getattr(spec, "name", None) in ONE_COPY:
        raise ThreadRefused(f"a second copy of the built-in module {spec.name} is not allowed here")
    return create(spec)


def _starting(start: Callable[..., Any]) -> Callable[..., Any]:
    """``start`` (a thread-starting function whose first argument is the thread's function),
    its function run with the starter's origin and in the registered contexts. What replaces
    ``start`` is a :func:`~autograder.sandbox.sealed.seal` call itself: no closure cell or
    global of it leads to ``start`` or to this module's state (the contexts, the probes)."""
    return sealed.seal(start, _start_guarded)


def _start_guarded(start: Callable[..., Any], function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    started_by = _here(sys._getframe(sealed.CALLER_DEPTH))          # the code starting the thread
    return start(_run_in_thread(function, started_by), *args, **kwargs)


def _here(frame: FrameType | None) -> tuple[Location, ...]:
    """The code that is not a library's at ``frame`` and outwards, then in the starting
    thread's own origin (the guards skip library code: only the rest can be judged)."""
    found: list[Location] = []
    for location in calling_code(frame):
        if not trust.is_library_file(location.filename):
            found.append(location)
            if len(found) >= MAX_ORIGIN_FRAMES:
                break
    return tuple(found)


AFTER_RETURN = Location("", 0, False)   # blamed when only a library's or the kit's code is running


def culprit(frame: FrameType | None, banning: Collection[str], students: Collection[str] | None,
            scoped: Collection[str] = (), strict: bool = False) -> Location | None:
    """The student code to blame for a banned call or operation made at ``frame`` (None: it
    is allowed), reading :func:`calling_code`:

    * a location in a file of ``banning`` (a file whose exercise bans it; for a file in
      ``scoped``, only where its scope probe says it runs the banned-in part);
    * else, with ``students`` (the worker's student files) known, student-made code of no
      known file (``exec`` of a string): every location neither a student file's nor a library's;
    * else, when ``strict`` (a worker, where neither the kit nor a library makes banned calls of
      its own) and no location is a student file's: :data:`AFTER_RETURN`, work the student's
      code left behind (an object it returned that computes when the kit reads it)."""
    unattributed: Location | None = None
    student_seen = False
    for location in calling_code(frame):
        filename = location.filename
        if filename in banning and (filename not in scoped or location.in_scope):
            return location
        if students is not None and filename in students:
            student_seen = True
        elif students is not None and unattributed is None and not trust.is_library_file(filename):
            unattributed = location
    if unattributed is not None:
        return unattributed
    return AFTER_RETURN if strict and not student_seen else None
