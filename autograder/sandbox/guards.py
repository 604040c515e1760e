"""Worker-side defences that do not depend on reading the student's source.

* :class:`BanGuards` — the banned-API rule at run time. ``intake.find_banned`` reads the
  source and names the line, but ``_T = torch`` or ``getattr(F, "scaled_dot_" + "product_attention")``
  slip past any static rule. Before a student module whose exercise bans an API is loaded,
  that API is replaced (in every module that binds it; a class gets a guarded ``__init__``)
  by a guard that raises :class:`BannedAPIError` when the code calling it, at any depth
  (through a library's trampoline such as ``concurrent.futures``' work items, or a thread
  the student started: :mod:`~autograder.sandbox.threads`), holds that student file, or (in a
  worker) student-made code of no known file (``exec`` of a string; code under a library's
  file name is refused earlier: ``trust.NameForgeryGuard``), as the operator layer judges
  (``opguard``). So torch's own code building a banned class is refused too when the student's
  code asked for it (an ex1 file making ``nn.TransformerEncoderLayer``, which holds a
  ``MultiheadAttention``). The zygote installs every exercise's guards before it forks workers
  (:func:`preinstall`); a guard refuses nothing until a ``ban`` names a file. The kit's
  support code and student files of exercises without that ban are unaffected.
* :func:`freeze_support` — the kit's support functions as they were before student code ran:
  each function gets its own copy of its module's globals, in which modules (``np``,
  ``torch``, ``F``) are replaced by read-only snapshots of their namespaces. A student file
  that rebinds ``autograder.support.autograd._copy`` or ``numpy.copy`` no longer changes
  what ``call_returning_arguments`` sends back. (What a call did to its inputs is judged in
  the grader, against the values it sent: ``contract_rules.call_and_check_unchanged``.)

Only the worker is affected; the grader process never installs either.
"""
from __future__ import annotations

import functools
import importlib
import sys
import types
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Iterable

from autograder.sandbox import sealed, threads, trust


class BannedAPIError(RuntimeError):
    """A student file called an API its exercise forbids."""


# --------------------------------------------------------------------------- banned APIs

class BanGuards:
    """Guards for dotted API names, each knowing which student files may not call it."""

    def __init__(self, on_refusal: Callable[[str], None] | None = None,
                 student_files: set[str] | None = None) -> None:
        self._files: dict[str, set[str]] = {}         # dotted name -> student filenames banning it
        self._on_refusal = on_refusal                 # told of every refusal (caught or not)
        # the worker's live set of student files: with it, student-made code of no known file
        # counts as the student's; None (in-process grading, where the grader's and a notebook's
        # own code share the interpreter): only the banning files' own calls are refused
        self._student_files = student_files
        self._scoped: set[str] = set()                # files whose ban covers part of them only

    def ban(self, filename: str, dotted_names: tuple[str, ...] | list[str], scoped: bool = False) -> None:
        """From now on ``filename`` may not call any of ``dotted_names`` (each name's guard is
        installed in this process once, here unless :func:`preinstall` did it already);
        ``scoped``: only from the part of the file its scope probe names
        (``threads.set_scope_probe``; ex5's ``AttentionClassifier``)."""
        if scoped:
            self._scoped.add(filename)
        for dotted in dotted_names:
            self._files.setdefault(dotted, set()).add(filename)
            guard = _guard_for(dotted)
            if guard is not None:
                guard.add_checker(self)

    def _check(self, dotted: str, frame: FrameType | None) -> None:
        """Refuse when the code calling (``frame`` outwards, then the code that started its
        thread) holds a student file banning ``dotted``, or (in a worker) student-made code of
        no known file, or no student file at all (an object the student's code returned,
        calling it when the kit reads it): :func:`threads.culprit`. A library's or the kit's
        code called by a student file without the ban passes."""
        banning = self._files.get(dotted)
        if not banning:
            return
        if threads.culprit(frame, banning, self._student_files, self._scoped,
                           strict=self._student_files is not None) is not None:
            message = f"{dotted} is not allowed in this exercise"
            if self._on_refusal is not None:
                self._on_refusal(message)
            raise BannedAPIError(message)


@dataclass
class _Guard:
    """One banned name's guard in this process: what replaced the original (a function, or a
    class's ``__init__``) and the :class:`BanGuards` it asks on every call."""
    owner: type | None                                # the class; None for a function (its original is sealed)
    installed: Callable[..., Any]                     # the guard itself
    add_checker: Callable[[BanGuards], None]          # adds a BanGuards it asks (the list is sealed away)

    def in_place(self, dotted: str) -> bool:
        if isinstance(self.owner, type):
            return self.owner.__dict__.get("__init__") is self.installed
        return _resolve(dotted) is self.installed


# The guards this process has installed, by dotted name. Installing one rebinds the name in
# every module that holds it, a walk over every loaded module's namespace that reads (and so
# writes the reference count of) every value: in a worker forked from the zygote, that copies
# some 60 MB of pages it shared. The zygote installs every exercise's guards once before it
# forks (:func:`preinstall`); a worker's ``ban`` then only records the student file.
_GUARDS: dict[str, _Guard] = {}


def preinstall(dotted_names: Iterable[str]) -> None:
    """Install the guards of ``dotted_names`` now (they refuse nothing until a ``ban``)."""
    for dotted in dotted_names:
        _guard_for(dotted)


def _guard_for(dotted: str) -> _Guard | None:
    """The guard of ``dotted`` in this process, installed if it is not (or no longer) in place;
    None when the name does not resolve or is not callable."""
    guard = _GUARDS.get(dotted)
    if guard is not None and guard.in_place(dotted):
        return guard
    target = _resolve(dotted)
    if target is None:
        return None
    guard = _install(dotted, target)
    if guard is not None:
        _GUARDS[dotted] = guard
    return guard


def _call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


def _install(dotted: str, target: Any) -> _Guard | None:
    """Replace ``target`` (a function, or a class's ``__init__``) by a guard that asks every
    :class:`BanGuards` added to it before calling the original. The original, the list of
    BanGuards and the check all live in :mod:`~autograder.sandbox.sealed` holders: the guard
    the student's code can reach carries no closure cell, default or global that leads to them
    (a cleared list, or the original called directly, would undo the ban)."""
    checkers: list[BanGuards] = []
    getframe = sys._getframe

    def add(checker: BanGuards) -> None:
        if not any(checker is known for known in checkers):
            checkers.append(checker)

    def checked(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        frame = getframe(sealed.CALLER_DEPTH)              # the code calling the guard
        for bans in checkers:
            bans._check(dotted, frame)
        return original(*args, **kwargs)

    add_checker = sealed.seal(add, _call)
    if isinstance(target, type):
        original_init = target.__init__
        guarded_init = sealed.seal(original_init, checked)
        functools.update_wrapper(guarded_init, original_init)
        del guarded_init.__wrapped__          # no way back to the unguarded original
        target.__init__ = guarded_init
        return _Guard(target, guarded_init, add_checker)
    if not callable(target):
        return None
    guarded = sealed.seal(target, checked)
    functools.update_wrapper(guarded, target)
    del guarded.__wrapped__                   # no way back to the unguarded original
    _rebind_everywhere(target, guarded)
    return _Guard(None, guarded, add_checker)


def _resolve(dotted: str) -> Any:
    """``torch.nn.functional.scaled_dot_product_attention`` -> the object, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return None
        return obj
    return None


def _rebind_everywhere(old: Any, new: Any) -> None:
    """Every module attribute that is ``old`` becomes ``new`` (torch binds some functions in
    several modules, e.g. ``torch._C._nn`` and ``torch.nn.functional``)."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if value is old:
                try:
                    setattr(module, name, new)
                except (AttributeError, TypeError):
                    pass


# --------------------------------------------------------------------------- frozen support code

class FrozenNamespace:
    """A module's attributes as they were when this was made; unknown names fall through
    to the live module (lazily created submodules)."""

    def __init__(self, module: types.ModuleType):
        self.__dict__.update(vars(module))
        object.__setattr__(self, "_FrozenNamespace__module", module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__module, name)

    def __repr__(self) -> str:
        return f"<frozen namespace of {self.__module.__name__}>"


def freeze_support(package: types.ModuleType) -> dict[str, Any]:
    """``dotted name -> callable`` for every public callable of ``package``'s modules, each
    running on frozen globals. Classes are kept, their methods rebuilt on frozen globals."""
    snapshot: dict[str, Any] = {}
    namespaces: dict[str, FrozenNamespace] = {}

    def walk(module: types.ModuleType, prefix: str) -> None:
        frozen = _frozen_globals(module, package.__name__, namespaces)
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue
            if isinstance(value, types.ModuleType) and value.__name__.startswith(package.__name__):
                walk(value, f"{prefix}{name}.")
            elif callable(value):
                snapshot[f"{prefix}{name}"] = frozen.get(name, value)

    walk(package, "")
    return snapshot


def _frozen_globals(module: types.ModuleType, package: str,
                    namespaces: dict[str, FrozenNamespace]) -> dict[str, Any]:
    """A private copy of ``module``'s globals: its own functions rebuilt on it, modules
    from outside the package replaced by frozen namespaces, class methods rebuilt."""
    frozen = dict(vars(module))
    for name, value in vars(module).items():
        if isinstance(value, types.ModuleType) and not value.__name__.startswith(package):
            if value.__name__ not in namespaces:
                namespaces[value.__name__] = FrozenNamespace(value)
            frozen[name] = namespaces[value.__name__]
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            frozen[name] = _rebuild(value, frozen)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in list(vars(value).items()):
                rebuilt = _rebuilt_member(member, module.__name__, frozen)
                if rebuilt is not None:
                    setattr(value, attr, rebuilt)
    return frozen


def _rebuilt_member(member: Any, module_name: str, frozen: dict) -> Any:
    if isinstance(member, types.FunctionType) and member.__module__ == module_name:
        return _rebuild(member, frozen)
    if isinstance(member, (staticmethod, classmethod)) and isinstance(member.__func__, types.FunctionType):
        return type(member)(_rebuild(member.__func__, frozen))
    if isinstance(member, property):
        parts = [_rebuild(f, frozen) if isinstance(f, types.FunctionType) else f
                 for f in (member.fget, member.fset, member.fdel)]
        return property(*parts, member.__doc__)
    return None


def _rebuild(fn: types.FunctionType, frozen: dict) -> Callable:
    copy = types.FunctionType(fn.__code__, frozen, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    copy.__qualname__, copy.__doc__, copy.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    copy.__annotations__ = fn.__annotations__
    return copy
