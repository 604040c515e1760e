"""Whose code a frame runs: a library's (the kit, the standard library, site-packages) or the
student's, and a worker-side guard that keeps student code from passing for a library's.

The banned-API layers (``guards.BanGuards``, ``opguard.OperatorGuard``) judge a call by the file
names of the code on the stack: a student file, code of no known file (``exec`` of a string:
the student's too), or a library file (trusted). A file name is only a field of a code object,
so :class:`NameForgeryGuard` refuses, in the worker, code that *student code* makes or runs under
the name of a library file: ``compile(src, ".../functools.py")`` (unless ``src`` is that file's
own text, as when importlib compiles a module without a cached ``.pyc``), ``exec``/``eval`` of
such a code object, ``code.replace(co_filename=...)``/``types.CodeType(...)``,
``types.FunctionType(code, ...)``, ``function.__code__ = code``, and bytecode unmarshalled
under a library file's name unless it is that file's own cached ``.pyc`` (an importlib loader
handed hand-made bytecode: importlib, a library, would run it). One audit hook
(``sys.addaudithook``: it cannot be removed) sees every one of those; "student code" is the
immediate Python caller when it is not a library file.

What it does not stop is listed in ``docs/ARCHITECTURE.md`` ("Banned APIs: three layers (and NumPy only)").
"""
from __future__ import annotations

import functools
import importlib.util
import marshal
import os
import sys
import sysconfig
import threading
import types
from typing import Any, Callable

MAX_SOURCE_BYTES = 8 * 1024 * 1024      # a library file compiled from source is compared up to this size
PYC_HEADER_BYTES = 16                    # magic, flags, and the source's mtime and size (or hash)


@functools.lru_cache(maxsize=1)
def trusted_roots() -> tuple[str, ...]:
    """Folders whose code is the kit's or a library's (never the student's), each ending in a
    separator. Computed once per process, after the libraries are imported (the worker's
    set-up), so torch's, NumPy's and matplotlib's installation folders are among them."""
    roots = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}        # the autograder package
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(os.path.abspath(path))
    for name in ("torch", "numpy", "matplotlib"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            roots.add(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
    return tuple(sorted(root + os.sep for root in roots))


def is_library_file(filename: str) -> bool:
    """``filename`` (a code object's ``co_filename``) names the kit's or a library's file."""
    if filename.startswith("<frozen "):
        return True
    return os.path.isabs(filename) and filename.startswith(trusted_roots())


def _is_file_text(source: Any, filename: str) -> bool:
    """``source`` (str or bytes) is the current text of ``filename`` on disk."""
    try:
        with open(filename, "rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return False
    if len(data) > MAX_SOURCE_BYTES:
        return False
    if isinstance(source, str):
        try:
            return source == data.decode("utf-8") or source == data.decode("utf-8").replace("\r\n", "\n")
        except UnicodeDecodeError:
            return False
    return isinstance(source, (bytes, bytearray, memoryview)) and bytes(source) == data


def nested_codes(code: types.CodeType) -> set[types.CodeType]:
    """``code`` and every code object nested in its constants (functions, lambdas, classes)."""
    found, pending = set(), [code]
    while pending:
        current = pending.pop()
        if current not in found:
            found.add(current)
            pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return found


def _is_cached_bytecode(data: Any, filename: str) -> bool:
    """``data`` (what ``marshal.loads`` was given) is the body of ``filename``'s cached ``.pyc``."""
    try:
        cached = importlib.util.cache_from_source(filename)
        with open(cached, "rb") as handle:
            pyc = handle.read(MAX_SOURCE_BYTES + 1)
    except (OSError, ValueError, NotImplementedError):
        return False
    return len(pyc) <= MAX_SOURCE_BYTES and bytes(data) == pyc[PYC_HEADER_BYTES:]


def _forged_bytecode_name(data: Any) -> str | None:
    """The library file name that bytecode ``data`` claims without being that file's cached
    ``.pyc`` (None: it claims no library's name, or it is the library's own bytecode)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    try:
        loaded = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None                                      # not code: nothing to claim
    if not isinstance(loaded, types.CodeType):
        return None
    names = {nested.co_filename for nested in nested_codes(loaded)}
    claimed = sorted(name for name in names if is_library_file(name))
    if not claimed:
        return None
    if len(names) == 1 and _is_cached_bytecode(data, loaded.co_filename):
        return None                                      # importlib loading a library's .pyc
    return claimed[0]


class NameForgeryGuard:
    """The audit hook described in the module docstring. ``on_refusal`` is told each refusal's
    message (the worker records it: the request fails even if student code caught the error)."""

    EVENTS = frozenset({"compile", "exec", "code.__new__", "function.__new__", "object.__setattr__",
                        "marshal.loads", "marshal.load"})

    def __init__(self, on_refusal: Callable[[str], None] | None = None) -> None:
        self._on_refusal = on_refusal
        self._getframe = sys._getframe          # captured before any student code runs
        self._inside = threading.local()      # this thread is in the hook (per thread: another
                                                # thread's events are never skipped for it)

    def install(self) -> None:
        trusted_roots()                          # computed now, with the libraries loaded
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if event not in self.EVENTS or getattr(self._inside, "busy", False):
            return
        self._inside.busy = True                        # opening a file below raises events itself
        try:
            forged = self._forged_name(event, args)
        finally:
            self._inside.busy = False
        if forged is None:
            return
        message = (f"making or running code under the name of a library file ({forged}) is not "
                   "allowed: the banned-API rules judge code by its file name")
        if self._on_refusal is not None:
            self._on_refusal(message)
        raise PermissionError(message)

    def _forged_name(self, event: str, args: tuple) -> str | None:
        """The library file name this event's code claims without being that library's own
        code (None: nothing to refuse). The caller is the frame that raised the event."""
        caller = self._getframe(2).f_code.co_filename
        if event == "marshal.load":              # from a file: the hook is not shown its bytes
            return None if is_library_file(caller) else "bytecode read from a file by marshal.load"
        if event == "marshal.loads":             # a library's .pyc, whoever loads it, is its own
            return _forged_bytecode_name(args[0] if args else None)
        claimed = self._claimed_name(event, args)
        if claimed is None or not is_library_file(claimed):
            return None
        if event == "compile":
            return None if _is_file_text(args[0], claimed) else claimed   # importlib without a .pyc
        return None if is_library_file(caller) else claimed              # a library's own code

    @staticmethod
    def _claimed_name(event: str, args: tuple) -> str | None:
        """The file name the code made or run by this event claims (None: not a code event)."""
        if event == "compile":
            name = args[1] if len(args) > 1 else None
            return name if isinstance(name, str) else None      # None: an AST (its code is judged when run)
        if event == "code.__new__":
            return args[1] if len(args) > 1 and isinstance(args[1], str) else None
        if event in ("exec", "function.__new__"):
            code = args[0] if args else None
        else:                                                   # object.__setattr__
            if len(args) < 3 or args[1] != "__code__":
                return None
            code = args[2]
        return code.co_filename if isinstance(code, types.CodeType) else None
