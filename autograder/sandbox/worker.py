"""The worker's side of the boundary: hold student objects, answer requests.

Runs inside the sandboxed worker process (and, for benchmarks, in-process). It imports
only numpy/torch/matplotlib, the wire format, ``autograder.support``, the contract (data:
which exercise bans which API) and ``guards``; it never sees hidden tests, the reference or
expected values. Nothing it answers is trusted by the grader: every answer is data that the
grader judges itself. Support code runs on frozen globals and banned APIs are guarded at
run time (``guards.py``).

Requests (:mod:`protocol`):
    Load     module, filename, source          exec a student module -> module handle
    Call     target, args, kwargs              call a worker object  -> value
    GetAttr  target                            read an attribute     -> value

A Call or GetAttr may carry ``seed`` (a test's first request does): the global random
generators are reset from it first, so each test starts from the same random state.

Before every request, torch's, NumPy's and Python's global settings are put back as they were
before any student code (``globalstate.py``).
"""
from __future__ import annotations

import __future__
import dataclasses
import functools
import linecache
import random
import sys
import traceback
import types
from typing import Any, Callable, Mapping

import matplotlib.artist          # the package's core (0.16 s); its figure and axes: the "figures" warm-up
import numpy as np
import torch

import autograder.support
from autograder.jsontypes import JSONObject
from autograder import contract  # data only: which exercise bans which API
from autograder.sandbox import globalstate, guards, lazy_dynamo, numpy_only, opguard, protocol, threads, trust, wire
from autograder.sandbox.reachin import ReachInWatch

# Loaded before student code: the pristine copy. The drawing helpers (matplotlib's figure and
# axes) come with the "figures" warm-up, in the zygote, only for workers that draw.
autograder.support.load_all(drawing=False)


# --------------------------------------------------------------------------- warm-ups
# What torch and matplotlib load on first use only, done in the zygote before it forks the
# workers of the exercises that need it (``Exercise.warm_up``), or in a spawned worker before
# it says ready: never inside a student's call, where that time would count against the
# call's timeout and could fail a correct submission, and never in the grader, which needs
# none of it.

def _warm_meta() -> None:
    """The first call on PyTorch's ``meta`` device (every device rule's stand-in for a GPU)
    imports about 500 modules, torch's decompositions and sympy: 0.3 s here (1 s when their
    wrappers also import torch._dynamo: see :mod:`~autograder.sandbox.lazy_dynamo`)."""
    layer = torch.nn.Linear(4, 4, device="meta")                      # no values: no CPU work
    x = torch.empty(2, 3, 4, device="meta")                          # (B, n, d)
    scores = layer(x) @ x.transpose(-1, -2)                           # (B, n, n)
    future = torch.ones(3, 3, dtype=torch.bool, device="meta").triu(1)
    torch.softmax(scores.masked_fill(future, float("-inf")) / 2.0, dim=-1)


def _warm_figures() -> None:
    """The drawing helpers of ``autograder.support`` (matplotlib's figure and axes: 0.4-0.6 s),
    then a first drawing, which loads matplotlib's fonts and the Agg canvas."""
    autograder.support.load_all()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 2))
    axes = figure.add_subplot()
    figure.colorbar(axes.imshow(np.eye(3)), ax=axes)
    axes.set_xticks(range(3), ["a", "b", "c"])
    FigureCanvasAgg(figure).draw()


def _warm_optimizer() -> None:
    """An optimizer's first step: 0.01 s now that it imports no torch._dynamo (1 s, 80 MB,
    without :mod:`~autograder.sandbox.lazy_dynamo`)."""
    weight = torch.nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.Adam([weight], lr=0.1)
    weight.sum().backward()
    optimizer.step()


WARM_UPS = {"meta": _warm_meta, "figures": _warm_figures, "optimizer": _warm_optimizer}
# The parts this process has loaded, or the process it was forked from: a batch's warm grader
# loads them all once, and the zygote of each grader it forks finds them loaded (the figures'
# warm-up drawn again: 0.05 s of CPU per submission for nothing).
_warmed: set[str] = set()


def warm_up(parts: tuple[str, ...] = tuple(WARM_UPS)) -> None:
    """Load what student calls of the given kinds will need (unknown names are ignored; a part
    loaded already, here or before this process was forked, is not loaded again); no
    ``torch._dynamo`` unless they compile (:mod:`~autograder.sandbox.lazy_dynamo`: a forked
    worker's zygote has it installed by the grader, a spawned worker and a warm grader install
    it here)."""
    lazy_dynamo.install()
    for part in parts:
        if part in WARM_UPS and part not in _warmed:
            WARM_UPS[part]()
            _warmed.add(part)


# Taken before any student code runs: a submission that replaces torch.manual_seed cannot
# stop the grader from resetting the generators. torch's is its CPU generator's own method:
# ``torch.manual_seed`` seeds the same generator and also queues a seed for CUDA, MPS and XPU,
# each with a formatted copy of the call stack (a millisecond per test in the worker, for
# devices a CPU grader never initialises); a device that is initialised is seeded below.
_SEEDERS = (random.seed, np.random.seed, torch.default_generator.manual_seed)
_CUDA_READY, _CUDA_SEED_ALL = torch.cuda.is_initialized, torch.cuda.manual_seed_all


def reset_global_state(seed: int) -> None:
    """Before each test: the global random generators (Python, NumPy, torch's CPU generator and,
    where student code initialised CUDA, CUDA's) from ``seed``: the same states as
    ``random.seed``, ``np.random.seed`` and ``torch.manual_seed`` give."""
    seed = int(seed) % 2**32
    for seeder in _SEEDERS:
        seeder(seed)
    if _CUDA_READY():
        _CUDA_SEED_ALL(seed)


MAX_MESSAGE_CHARS = 2000
MAX_TRACE_FRAMES = 8
# the `from __future__` features a notebook's hoisted imports turn on, for each of its cells
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

_HANDLE_TYPES: tuple[type, ...] = (types.ModuleType, torch.nn.Module, matplotlib.artist.Artist,
                                   torch.optim.Optimizer, torch.Generator)


class ObjectTable:
    """Objects that stay in the worker, addressed by id (modules by ``m:<name>``).
    ``support``: the pristine support functions by dotted name (see :func:`snapshot_support`).

    A support path whose module was not in the snapshot (a drawing helper in a worker that
    does not draw: imported, if at all, by student code afterwards) is refused, never looked
    up on the live module."""

    def __init__(self, roots: dict[str, Any], support: Mapping[str, Any]):
        self._objects: dict[str, Any] = dict(roots)
        self._support = support
        self._support_modules = frozenset(name.split(".")[0] for name in support if "." in name)
        self._next = 0

    def add(self, obj: Any) -> str:
        for key, value in self._objects.items():     # same object, same handle
            if value is obj:
                return key
        self._next += 1
        key = f"o{self._next}"
        self._objects[key] = obj
        return key

    def bind(self, key: str, obj: Any) -> None:
        """Name an object by a fixed key (a student module: ``m:<name>``)."""
        self._objects[key] = obj

    def resolve(self, ref: protocol.Ref) -> Any:
        if ref.key not in self._objects:
            raise LookupError("this object no longer exists in the worker")
        if ref.kind is protocol.RefKind.SUPPORT and ref.path:   # pristine snapshot, not module attributes
            dotted = ".".join(ref.path)
            if dotted in self._support:
                return self._support[dotted]
            if ref.path[0] not in self._support_modules:
                raise LookupError(f"the kit's helper module {ref.path[0]!r} is not loaded in this worker")
        obj = self._objects[ref.key]
        for name in ref.path:        # a module's attribute as modules define it: a class swapped in
            obj = (types.ModuleType.__getattribute__(obj, name) if isinstance(obj, types.ModuleType)
                   else getattr(obj, name))        # by the student's file does not decide it
        return obj


def snapshot_support() -> tuple[types.ModuleType, Mapping[str, Any]]:
    """Every public callable of ``autograder.support`` as it is before student code runs, each
    on frozen globals (``guards.freeze_support``), in a read-only mapping held by the server
    alone (no module-level state): rebinding a global of a support module, or a numpy/torch
    function it uses, from a student file changes nothing."""
    import autograder.support as support

    return support, types.MappingProxyType(dict(guards.freeze_support(support)))


class Server:
    """Dispatches decoded requests; used by the real worker and by the in-process backend.

    ``watch_reach_ins``: install the audit hook of :mod:`reachin` (the real worker, before
    any student code; never in the grader's own process)."""

    def __init__(self, watch_reach_ins: bool = False) -> None:
        support, snapshot = snapshot_support()
        self.table = ObjectTable({protocol.SUPPORT_KEY: support}, snapshot)
        self.student_files: set[str] = set()
        self.operators = opguard.OperatorGuard(strict=watch_reach_ins)   # banned APIs at the operator level
        self.bans = guards.BanGuards(on_refusal=self.operators.record,
                                     student_files=self.student_files if watch_reach_ins else None)
        self.reach = ReachInWatch(self.student_files)
        self.state = globalstate.GlobalState.take(warnings_too=watch_reach_ins)   # before student code
        # in a worker, the NumPy-only functions of loaded files run under a no-torch mode
        self.numpy_only = numpy_only.NumpyOnlyGuard(self.operators.record) if watch_reach_ins else None
        if self.numpy_only is not None:               # torch's modes are per thread: each new one too
            threads.run_in_every_thread(self.numpy_only.thread_watch)
        if watch_reach_ins:
            self.reach.install()
            trust.NameForgeryGuard(on_refusal=self.operators.record).install()

    # -- entry point: one request in, one reply out
    def handle(self, request: protocol.Request) -> protocol.Reply:
        """One request, watched by the operator guard (a request that reached an operator its
        student file's exercise bans fails, even if the student's code caught the error); the
        reply carries the reach-ins noticed meanwhile (:mod:`reachin`)."""
        self.state.restore()                          # the kit's torch/NumPy state at every call
        try:
            with self.operators.watching():
                reply = self._handle(request)
        except guards.BannedAPIError as exc:
            reply = protocol.Reply(error=self._describe(exc))
        reach = self.reach.new_records()
        if reach:
            reply = dataclasses.replace(reply, reach=tuple(protocol.ReachIn(*r) for r in reach))
        return reply

    def handle_frame(self, header: JSONObject, buffers: list[bytes]) -> tuple[dict, list[bytes]]:
        """One frame in, one frame out (a malformed request is answered, never raised)."""
        try:
            request = protocol.request_from_frame(header, buffers)
        except wire.WireError as exc:
            return protocol.Reply(error=protocol.WorkerError(protocol.ErrorKind.BAD_REQUEST,
                                                             message=str(exc))).to_frame()
        return self.handle(request).to_frame()

    def _handle(self, request: protocol.Request) -> protocol.Reply:
        try:
            if isinstance(request, protocol.Load):
                return self._load(request)
            if request.seed is not None:
                reset_global_state(request.seed)
            target = self.table.resolve(request.target)
            if isinstance(request, protocol.GetAttr):
                return self._reply(target)
            decoder = wire.Decoder(list(request.buffers),
                                   from_ref=lambda node: self.table.resolve(protocol.Ref.from_json(node)))
            args = decoder.decode(request.args)
            kwargs = decoder.decode(request.kwargs)
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise wire.WireError("malformed call")
            return self._reply(target(*args, **kwargs))
        except BaseException as exc:                  # SystemExit and KeyboardInterrupt included
            return protocol.Reply(error=self._describe(exc))

    def _reply(self, value: Any) -> protocol.Reply:
        encoder = wire.Encoder(to_handle=self._to_handle)
        try:
            tree = encoder.encode(value)
        except wire.Unencodable as exc:
            return protocol.Reply(error=protocol.WorkerError(
                protocol.ErrorKind.UNENCODABLE, exc.type_name, f"a value of type {exc.type_name}"))
        return protocol.Reply(value=tree, buffers=tuple(encoder.buffers))

    def _to_handle(self, obj: Any) -> dict:
        if isinstance(obj, _HANDLE_TYPES) or callable(obj):
            return protocol.Handle(self.table.add(obj), _type_name(obj)).to_json()
        raise wire.Unencodable(_type_name(obj))

    # -- loading student modules from source text
    def _load(self, request: protocol.Load) -> protocol.Reply:
        name, filename, source = request.module, request.filename, request.source
        module = types.ModuleType(name)
        module.__file__ = filename
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        self.student_files.add(filename)
        ex = contract.BY_MODULE.get(name)
        scoped = ex is not None and bool(ex.banned_in)
        probe = None
        if scoped:                                      # ex5: the bans hold in AttentionClassifier
            probe = scope_probe(module, ex.banned_in)
            threads.set_scope_probe(filename, probe)
        self.bans.ban(filename, _banned_for(name), scoped=scoped)      # before any of its code runs
        if ex is not None:
            self.operators.ban(filename, ex.id, contract.banned_operators(ex), scoped=scoped)
        sys.modules[name] = module
        note = None
        try:
            code = compile(source, filename, "exec", dont_inherit=True)    # a syntax error anywhere: not graded
            if not request.cells:
                exec(code, module.__dict__)
            else:
                raised = run_notebook_cells(source, filename, request.cells, module.__dict__,
                                            code.co_flags & _FUTURE_FLAGS)
                note = None if raised is None else self._describe(raised)
        except BaseException as exc:
            sys.modules.pop(name, None)
            return protocol.Reply(error=self._describe(exc))
        if ex is not None and ex.numpy_only and self.numpy_only is not None:
            self.numpy_only.wrap(module, ex.numpy_only)
        if probe is not None:
            probe.loaded(module)
        ref = protocol.Ref.module(name)
        self.table.bind(ref.key, module)
        return protocol.Reply(value=protocol.Handle(ref.key, "module").to_json(), note=note)

    # -- exceptions as data, with the student's own frames only
    def _describe(self, exc: BaseException) -> protocol.WorkerError:
        frames = traceback.extract_tb(exc.__traceback__)
        where = self._student_frames(frames)
        kind = protocol.ErrorKind.EXCEPTION
        if isinstance(exc, NotImplementedError) and frames and frames[-1].filename in self.student_files:
            kind = protocol.ErrorKind.NOT_IMPLEMENTED   # the stub's own `raise`, not one from inside torch
        elif isinstance(exc, (wire.WireError, LookupError)) and not where:
            kind = protocol.ErrorKind.BAD_REQUEST
        if isinstance(exc, SyntaxError):
            return protocol.WorkerError(kind, _type_name(exc), _clip(str(exc.msg), MAX_MESSAGE_CHARS), where,
                                        line=exc.lineno, offset=exc.offset, text=_clip(exc.text or "", 200))
        return protocol.WorkerError(kind, _type_name(exc), _safe_str(exc), where)

    def _student_frames(self, frames: traceback.StackSummary) -> tuple[protocol.Frame, ...]:
        """The traceback's frames in the student's files (the kit's stay private), last few."""
        return tuple(protocol.Frame(fs.filename, fs.lineno, _clip(fs.name, 80), _clip(fs.line or "", 200))
                     for fs in frames if fs.filename in self.student_files)[-MAX_TRACE_FRAMES:]


def run_notebook_cells(source: str, filename: str, starts: tuple[int, ...], namespace: dict[str, Any],
                       flags: int = 0) -> BaseException | None:
    """A notebook's cells (``starts``: the line each begins on in ``source``), each compiled
    on its own, on its own lines (tracebacks and the banned-API guards see the student's
    file), with ``flags`` (its hoisted ``from __future__`` imports), and run in turn in
    ``namespace``, as nbgrader runs a notebook: an error ends its cell and the next one runs.
    The first such error, if any."""
    lines = source.splitlines(keepends=True)
    first = None
    for start, end in zip(starts, (*starts[1:], len(lines) + 1)):
        cell = "\n" * (start - 1) + "".join(lines[start - 1:end - 1])
        try:
            exec(compile(cell, filename, "exec", flags=flags, dont_inherit=True), namespace)
        except (Exception, SystemExit) as exc:
            first = first or exc
    return first


def preinstall_bans() -> None:
    """Every exercise's banned-API guards, installed before workers fork (by the zygote): a
    worker's Load then only records which student file they refuse (``guards.preinstall``)."""
    guards.preinstall(dict.fromkeys(api for ex in contract.EXERCISES for api in ex.banned))


class ScopeProbe:
    """Whether a frame of ``module``'s file runs the part a scoped ban covers (``names``: the
    contract's, e.g. ``AttentionClassifier``): the code of the class the module binds to the
    name and of its bases in that file (whatever it was called where it was defined: an alias
    or a subclass counts), functions bound in their bodies, and what is nested in those; or a
    function so bound. Functions this code calls are covered by its frame below theirs on the
    stack; the module's top-level code and its other functions are not covered. A name bound
    to anything else covers the whole file, as before the ban was scoped; so does a name the
    file, once loaded, does not bind at all.

    When the module has loaded (:meth:`loaded`), a name its ``__getattr__`` hands out is bound
    in its namespace once: the probe reads the namespace only, never the student's code."""

    def __init__(self, module: types.ModuleType, names: tuple[str, ...]) -> None:
        self._module, self._names = module, names
        self._filename = getattr(module, "__file__", None)
        self._loaded = False

    def loaded(self, module: types.ModuleType) -> None:
        for name in self._names:
            if name not in module.__dict__:
                try:
                    module.__dict__[name] = types.ModuleType.__getattribute__(module, name)
                except Exception:
                    pass
        self._loaded = True

    def __call__(self, frame: types.FrameType) -> bool:
        for name in self._names:
            bound = self._module.__dict__.get(name)
            if isinstance(bound, type):
                if frame.f_code in _class_codes(bound, self._filename):
                    return True
            elif isinstance(bound, types.FunctionType):
                if frame.f_code in trust.nested_codes(bound.__code__):
                    return True
            elif bound is not None or self._loaded:       # unbound once loaded: the whole file
                return True
        return False


def scope_probe(module: types.ModuleType, names: tuple[str, ...]) -> ScopeProbe:
    """The :class:`ScopeProbe` of ``module`` for the scoped ban on ``names``."""
    return ScopeProbe(module, names)


def _class_codes(cls: type, filename: str | None) -> set[types.CodeType]:
    """The code of ``cls`` and of its bases defined in ``filename`` (read without the
    student's metaclass: the real MRO and class dictionaries)."""
    codes: set[types.CodeType] = set()
    for klass in type.__dict__["__mro__"].__get__(cls):
        for member in type.__dict__["__dict__"].__get__(klass).values():
            for function in _functions_of(member):
                if function.__code__.co_filename == filename:
                    codes |= trust.nested_codes(function.__code__)
    return codes


def _functions_of(member: Any) -> list[types.FunctionType]:
    """The Python functions a class attribute runs: a function, a static or class method, a
    property's accessors, a partial's function, a callable object's methods."""
    if isinstance(member, types.FunctionType):
        return [member]
    if isinstance(member, (staticmethod, classmethod)):
        return _functions_of(member.__func__)
    if isinstance(member, property):
        return [f for f in (member.fget, member.fset, member.fdel) if isinstance(f, types.FunctionType)]
    if isinstance(member, (functools.partial, functools.partialmethod)):
        return _functions_of(member.func)
    if callable(member) and not isinstance(member, type):
        return [f for f in type.__dict__["__dict__"].__get__(type(member)).values() if isinstance(f, types.FunctionType)]
    return []


def _banned_for(module_name: str) -> tuple[str, ...]:
    return next((ex.banned for ex in contract.EXERCISES if ex.module == module_name), ())


def _type_name(obj: Any) -> str:
    return _clip(type(obj).__name__, 80)


def _clip(text: str, limit: int) -> str:
    text = str.__str__(text) if isinstance(text, str) else "?"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _safe_str(exc: BaseException) -> str:
    try:
        return _clip(str(exc), MAX_MESSAGE_CHARS)
    except BaseException:                             # a __str__ that raises
        return "<exception message could not be shown>"


KIT_PACKAGES = ("autograder", "reference")     # the kit's and the instructor's code: never the student's to read


def hide_kit_modules() -> int:
    """Take the kit's modules out of ``sys.modules`` (and the grader's ``__main__``, whose
    globals hold them), before any student code runs: the guards' state lives in those
    modules' objects, and ``sys.modules["autograder.sandbox.guards"]`` was a plain read away
    from emptying it. The worker's code keeps running on its own references; what student
    code can still reach of the kit (a guard, a patched thread start) is a sealed call that
    leads nowhere (``sealed``). Importing the kit again fails where it is not visible (the
    namespaces root) and is reported as a reach-in where it is. The number of modules taken."""
    taken = [name for name in list(sys.modules)
             if name.split(".", 1)[0] in KIT_PACKAGES]
    for name in taken:
        del sys.modules[name]
    sys.modules["__main__"] = types.ModuleType("__main__")
    return len(taken)


def serve(sock) -> None:
    """The worker's main loop: answer frames until the grader closes the socket."""
    server = Server(watch_reach_ins=True)
    opguard.guard_new_threads()
    hide_kit_modules()
    while True:
        try:
            header, buffers = wire.recv(sock)
        except (EOFError, OSError):
            return
        reply, out_buffers = server.handle_frame(header, buffers)
        try:
            wire.send(sock, reply, out_buffers)
        except wire.WireError:
            too_large = protocol.WorkerError(protocol.ErrorKind.UNENCODABLE, message="reply too large")
            wire.send(sock, *protocol.Reply(error=too_large).to_frame())
