"""The worker's side of the boundary: hold student objects, answer requests.

Runs inside the sandboxed worker process (and, for benchmarks, in-process). It imports
only numpy/torch/matplotlib, the wire format, ``autograder.support``, the contract (data:
which exercise bans which API) and ``guards``; it never sees hidden tests, the reference or
expected values. Nothing it answers is trusted by the grader: every answer is data that the
grader judges itself. Support code runs on frozen globals and banned APIs are guarded at
run time (``guards.py``).

Requests (header ``op``):
    load     {name, filename, source}          exec a student module -> module handle
    call     {target, args, kwargs}            call a worker object  -> value
    getattr  {target}                          read an attribute     -> value
    seed     {seed}                            reset Python's, NumPy's and torch's global RNGs

Before every request, torch's, NumPy's and Python's global settings are put back as they were
before any student code (``globalstate.py``).
"""
from __future__ import annotations

import linecache
import random
import sys
import traceback
import types
from typing import Any, Mapping

import matplotlib
import numpy as np
import torch

import autograder.support  # noqa: F401  (loaded before student code: the pristine copy)
from autograder import contract  # data only: which exercise bans which API
from autograder.sandbox import globalstate, guards, opguard, wire
from autograder.sandbox.reachin import ReachInWatch


def load_lazy_parts() -> None:
    """Run once, where the worker module is imported (the grader, before any worker forks; a
    spawned worker before it says ready): what torch and matplotlib load on first use only.

    The first call on PyTorch's ``meta`` device imports about 800 modules (sympy, the meta
    registrations: about 4 s here, more at half a CPU) and the first drawing loads fonts. Done
    inside a student's call, that time would count against the call's timeout and could fail
    a correct submission (every exercise's device probe uses the meta device)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    layer = torch.nn.Linear(4, 4, device="meta")                      # no values: no CPU work
    x = torch.empty(2, 3, 4, device="meta")                          # (B, n, d)
    scores = layer(x) @ x.transpose(-1, -2)                           # (B, n, n)
    future = torch.ones(3, 3, dtype=torch.bool, device="meta").triu(1)
    torch.softmax(scores.masked_fill(future, float("-inf")) / 2.0, dim=-1)
    figure = Figure(figsize=(2, 2))
    axes = figure.add_subplot()
    figure.colorbar(axes.imshow(np.eye(3)), ax=axes)
    axes.set_xticks(range(3), ["a", "b", "c"])
    FigureCanvasAgg(figure).draw()


load_lazy_parts()

# Taken before any student code runs: a submission that replaces torch.manual_seed cannot
# stop the grader from resetting the generators.
_SEEDERS = (random.seed, np.random.seed, torch.manual_seed)

MAX_MESSAGE_CHARS = 2000
MAX_TRACE_FRAMES = 8

_HANDLE_TYPES: tuple[type, ...] = (types.ModuleType, torch.nn.Module, matplotlib.artist.Artist,
                                   torch.optim.Optimizer, torch.Generator)


class ObjectTable:
    """Objects that stay in the worker, addressed by id (modules by ``m:<name>``).
    ``support``: the pristine support functions by dotted name (see :func:`snapshot_support`)."""

    def __init__(self, roots: dict[str, Any], support: Mapping[str, Any]):
        self._objects: dict[str, Any] = dict(roots)
        self._support = support
        self._next = 0

    def add(self, obj: Any) -> str:
        for key, value in self._objects.items():     # same object, same handle
            if value is obj:
                return key
        self._next += 1
        key = f"o{self._next}"
        self._objects[key] = obj
        return key

    def resolve(self, ref: dict) -> Any:
        key, path = ref.get("R"), ref.get("path", [])
        if key not in self._objects:
            raise LookupError("this object no longer exists in the worker")
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            raise LookupError("malformed attribute path")
        if key == "support" and path:                # pristine snapshot, not module attributes
            dotted = ".".join(path)
            if dotted in self._support:
                return self._support[dotted]
        obj = self._objects[key]
        for name in path:
            obj = getattr(obj, name)
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
        self.table = ObjectTable({"support": support}, snapshot)
        self.student_files: set[str] = set()
        self.operators = opguard.OperatorGuard()      # banned APIs at the operator level
        self.bans = guards.BanGuards(on_refusal=self.operators.record)
        self.reach = ReachInWatch(self.student_files)
        self.state = globalstate.GlobalState.take(warnings_too=watch_reach_ins)   # before student code
        if watch_reach_ins:
            self.reach.install()

    # -- entry point: one frame in, one frame out
    def handle(self, header: dict, buffers: list[bytes]) -> tuple[dict, list[bytes]]:
        """One request, watched by the operator guard (a request that reached an operator its
        student file's exercise bans fails, even if the student's code caught the error); the
        reply carries the reach-ins noticed meanwhile (:mod:`reachin`)."""
        self.state.restore()                          # the kit's torch/NumPy state at every call
        try:
            with self.operators.watching():
                reply, out = self._handle(header, buffers)
        except guards.BannedAPIError as exc:
            reply, out = {"error": self._describe(exc)}, []
        reach = self.reach.new_records()
        if reach:
            reply["reach"] = reach
        return reply, out

    def _handle(self, header: dict, buffers: list[bytes]) -> tuple[dict, list[bytes]]:
        op = header.get("op")
        try:
            if op == "seed":
                for seeder in _SEEDERS:
                    seeder(int(header["seed"]) % 2**32)
                return {"ok": None}, []
            if op == "load":
                return self._load(header)
            decoder = wire.Decoder(buffers, from_ref=self.table.resolve)
            target = self.table.resolve(header.get("target") or {})
            if op == "getattr":
                return self._reply(target)
            if op == "call":
                args = decoder.decode(header.get("args", {"L": []}))
                kwargs = decoder.decode(header.get("kwargs", {"D": []}))
                if not isinstance(args, list) or not isinstance(kwargs, dict):
                    raise wire.WireError("malformed call")
                return self._reply(target(*args, **kwargs))
            return {"error": {"kind": "bad_request", "type": "", "message": f"unknown op {op!r}"}}, []
        except BaseException as exc:                  # SystemExit and KeyboardInterrupt included
            return {"error": self._describe(exc)}, []

    def _reply(self, value: Any) -> tuple[dict, list[bytes]]:
        encoder = wire.Encoder(to_handle=self._to_handle)
        try:
            tree = encoder.encode(value)
        except wire.Unencodable as exc:
            return {"error": {"kind": "unencodable", "type": exc.type_name,
                              "message": f"a value of type {exc.type_name}"}}, []
        return {"ok": tree}, encoder.buffers

    def _to_handle(self, obj: Any) -> dict:
        if isinstance(obj, _HANDLE_TYPES) or callable(obj):
            return {"H": self.table.add(obj), "type": _type_name(obj)}
        raise wire.Unencodable(_type_name(obj))

    # -- loading student modules from source text
    def _load(self, header: dict) -> tuple[dict, list[bytes]]:
        name, filename, source = header["name"], header["filename"], header["source"]
        module = types.ModuleType(name)
        module.__file__ = filename
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        self.student_files.add(filename)
        self.bans.ban(filename, _banned_for(name))      # before any of its code runs
        ex = contract.BY_MODULE.get(name)
        if ex is not None:
            self.operators.ban(filename, ex.id, contract.banned_operators(ex))
        sys.modules[name] = module
        try:
            code = compile(source, filename, "exec", dont_inherit=True)
            exec(code, module.__dict__)
        except BaseException as exc:
            sys.modules.pop(name, None)
            return {"error": self._describe(exc)}, []
        self.table._objects[f"m:{name}"] = module
        return {"ok": {"H": f"m:{name}", "type": "module"}}, []

    # -- exceptions as data, with the student's own frames only
    def _describe(self, exc: BaseException) -> dict:
        frames = traceback.extract_tb(exc.__traceback__)
        where = self._student_frames(frames)
        kind = "exception"
        if isinstance(exc, NotImplementedError) and frames and frames[-1].filename in self.student_files:
            kind = "not_implemented"      # the stub's own `raise`, not one from inside torch
        elif isinstance(exc, (wire.WireError, LookupError)) and not where:
            kind = "bad_request"
        info = {"kind": kind, "type": _type_name(exc), "message": _safe_str(exc), "where": where}
        if isinstance(exc, SyntaxError):
            info.update(line=exc.lineno, offset=exc.offset, text=_clip(exc.text or "", 200),
                        message=_clip(str(exc.msg), MAX_MESSAGE_CHARS))
        return info

    def _student_frames(self, frames: traceback.StackSummary) -> list[list]:
        """The traceback's frames in the student's files (the kit's stay private), last few."""
        return [[fs.filename, fs.lineno, _clip(fs.name, 80), _clip(fs.line or "", 200)]
                for fs in frames if fs.filename in self.student_files][-MAX_TRACE_FRAMES:]


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


def serve(sock) -> None:
    """The worker's main loop: answer frames until the grader closes the socket."""
    server = Server(watch_reach_ins=True)
    while True:
        try:
            header, buffers = wire.recv(sock)
        except (EOFError, OSError):
            return
        reply, out_buffers = server.handle(header, buffers)
        try:
            wire.send(sock, reply, out_buffers)
        except wire.WireError:
            wire.send(sock, {"error": {"kind": "unencodable", "type": "", "message": "reply too large"}})
