"""What the grader and a worker say to each other, as types.

:mod:`wire` frames a message (a JSON header plus raw buffers) and encodes values; this module
says what the messages are: the requests the grader sends (:class:`Load`, :class:`Call`,
:class:`GetAttr`), the references and handles that name objects living in the
worker (:class:`Ref`, :class:`Handle`), and what comes back (:class:`Reply`, with a
:class:`WorkerError` when the student's code failed). Everything the grader reads from a
worker is checked here, where it enters (:meth:`Reply.from_frame`): typed fields, clipped
strings, bounded lists; anything else is a :class:`~autograder.sandbox.wire.WireError`.

A request is one frame ``{"op": …, …}``; a reply is ``{"ok": value}`` or
``{"error": record}``, either with an optional ``"reach"`` list (:mod:`reachin`).

A test's first call or attribute read carries the test's seed (``"seed"``: the worker resets
its global random state from it before anything else), so starting a test costs no round
trip of its own (:meth:`autograder.sandbox.session.Sandbox.reseed`).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Union

from autograder.jsontypes import JSONObject
from autograder import textsafe
from autograder.sandbox.frames import WireError
from autograder.vocabulary import Word

# --------------------------------------------------------------------------- names of worker objects


class RefKind(enum.Enum):
    MODULE = "module"        # a student module: "m:<name>"
    SUPPORT = "support"      # the kit's pristine helpers: "support"
    OBJECT = "object"        # an object the student's code returned: "o<n>"


SUPPORT_KEY = "support"
MODULE_PREFIX = "m:"


@dataclass(frozen=True)
class Ref:
    """A worker object named by the grader: a root (``key``) and an attribute path; for an
    object the student's code returned, the grader's note of its ``type`` (not sent)."""
    key: str
    path: tuple[str, ...] = ()
    type: str = field(default="object", compare=False)

    @classmethod
    def module(cls, name: str) -> "Ref":
        return cls(MODULE_PREFIX + name)

    @classmethod
    def support(cls) -> "Ref":
        return cls(SUPPORT_KEY)

    @property
    def kind(self) -> RefKind:
        if self.key.startswith(MODULE_PREFIX):
            return RefKind.MODULE
        return RefKind.SUPPORT if self.key == SUPPORT_KEY else RefKind.OBJECT

    @property
    def survives_restart(self) -> bool:
        """Modules and the kit's helpers exist in every fresh worker; returned objects do not."""
        return self.kind is not RefKind.OBJECT

    def attr(self, name: str) -> "Ref":
        return Ref(self.key, self.path + (name,), self.type)

    def describe(self) -> str:
        """How a student reads it: ``attention.softmax``, ``support.lm.build``,
        ``a MultiHeadAttention object.forward``."""
        parts = list(self.path[:8])
        if self.kind is RefKind.MODULE:
            return ".".join([self.key.removeprefix(MODULE_PREFIX), *parts])
        if self.kind is RefKind.SUPPORT:
            return ".".join([SUPPORT_KEY, *parts])
        return ".".join([f"a {self.type} object", *(parts or ["__call__"])])

    def to_json(self) -> JSONObject:
        return {"R": self.key, "path": list(self.path)}

    @classmethod
    def from_json(cls, node: Any) -> "Ref":
        if not isinstance(node, dict) or not isinstance(node.get("R"), str):
            raise WireError("malformed reference")
        path = node.get("path", [])
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            raise WireError("malformed attribute path")
        return cls(node["R"], tuple(path))


@dataclass(frozen=True)
class Handle:
    """An object that stays in the worker, as a reply names it (worker -> grader)."""
    key: str
    type: str = "object"

    def to_json(self) -> JSONObject:
        return {"H": self.key, "type": self.type}

    def ref(self) -> Ref:
        """How the grader names it in later requests."""
        return Ref(self.key, (), self.type)

    @classmethod
    def from_json(cls, node: JSONObject) -> "Handle":
        if not isinstance(node.get("H"), str):
            raise WireError("malformed handle")
        return cls(node["H"], textsafe.one_line(str(node.get("type", "object")), 80))


# --------------------------------------------------------------------------- requests


class Op(Word):
    LOAD = "load"          # exec a student module from source text
    CALL = "call"          # call a worker object
    GETATTR = "getattr"    # read a worker attribute


@dataclass(frozen=True)
class Load:
    module: str            # "attention"
    filename: str          # what tracebacks show: "attention.py"
    source: str
    # a notebook: the first line of each of its cells in ``source``. Each cell runs on its own,
    # in turn, as nbgrader runs a notebook: an error ends that cell only (the reply's ``note``
    # is the first such error)
    cells: tuple[int, ...] = ()

    def to_frame(self) -> tuple[dict, list[bytes]]:
        return {"op": Op.LOAD.value, "name": self.module, "filename": self.filename,
                "source": self.source, **({"cells": list(self.cells)} if self.cells else {})}, []


@dataclass(frozen=True)
class Call:
    """``target(*args, **kwargs)``: the arguments already encoded (wire.Encoder) into
    ``args``/``kwargs`` trees and ``buffers``; ``refs``: the worker objects among them.
    ``seed``: reset the worker's global random state from it first (a test's first request)."""
    target: Ref
    args: Any = field(default_factory=lambda: {"L": []})
    kwargs: Any = field(default_factory=lambda: {"D": []})
    buffers: tuple[bytes, ...] = ()
    refs: tuple[Ref, ...] = ()
    seed: int | None = None

    def to_frame(self) -> tuple[dict, list[bytes]]:
        return (_seeded({"op": Op.CALL.value, "target": self.target.to_json(), "args": self.args,
                         "kwargs": self.kwargs}, self.seed), list(self.buffers))


@dataclass(frozen=True)
class GetAttr:
    """Read ``target``; ``seed`` as for :class:`Call`."""
    target: Ref
    seed: int | None = None

    def to_frame(self) -> tuple[dict, list[bytes]]:
        return _seeded({"op": Op.GETATTR.value, "target": self.target.to_json()}, self.seed), []


Request = Union[Load, Call, GetAttr]


def _seeded(header: dict, seed: int | None) -> dict:
    if seed is not None:
        header["seed"] = int(seed)
    return header


def _seed_of(header: JSONObject) -> int | None:
    seed = header.get("seed")
    if seed is not None and type(seed) is not int:
        raise WireError("malformed seed")
    return seed


MAX_CELLS = 100_000


def _cell_lines(cells: Any) -> bool:
    """A list of increasing line numbers from 1 (at most MAX_CELLS), or the empty list."""
    return (isinstance(cells, list) and len(cells) <= MAX_CELLS
            and all(type(c) is int and c >= 1 for c in cells)
            and all(a < b for a, b in zip(cells, cells[1:])))


def request_from_frame(header: JSONObject, buffers: list[bytes]) -> Request:
    """The worker's reading of a request frame (``WireError`` when malformed)."""
    try:
        op = Op(header.get("op"))
    except ValueError:
        raise WireError(f"unknown op {header.get('op')!r}") from None
    if op is Op.LOAD:
        name, filename, source = header.get("name"), header.get("filename"), header.get("source")
        cells = header.get("cells", [])
        if not all(isinstance(v, str) for v in (name, filename, source)) or not _cell_lines(cells):
            raise WireError("malformed load request")
        return Load(name, filename, source, tuple(cells))
    target, seed = Ref.from_json(header.get("target")), _seed_of(header)
    if op is Op.GETATTR:
        return GetAttr(target, seed)
    return Call(target, header.get("args", {"L": []}), header.get("kwargs", {"D": []}), tuple(buffers), seed=seed)


# --------------------------------------------------------------------------- errors


class ErrorKind(Word):
    """What went wrong on the student's side (one vocabulary, worker to results.json)."""
    EXCEPTION = "exception"            # the student's code raised
    NOT_IMPLEMENTED = "not_implemented"   # the stub's own NotImplementedError
    UNENCODABLE = "unencodable"        # a value that may not cross the boundary
    BAD_REQUEST = "bad_request"        # the grader asked for something that does not exist
    MISSING = "missing"                # no file for the exercise (intake)
    TIMEOUT = "timeout"                # the worker overran its deadline (grader side)
    DIED = "died"                      # the worker ended or broke the protocol (grader side)


SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
_MAX_ERROR_BYTES = 4000
_MAX_FRAMES = 16


@dataclass(frozen=True)
class Frame:
    """One traceback frame in the student's own file."""
    filename: str
    line: int | None
    function: str
    source: str


@dataclass(frozen=True)
class WorkerError:
    """The student's code failed: what was raised, where (the student's frames only)."""
    kind: ErrorKind
    type: str = ""             # the exception's class name ("ValueError")
    message: str = ""
    where: tuple[Frame, ...] = ()
    line: int | None = None    # SyntaxError: where
    offset: int | None = None
    text: str = ""             # SyntaxError: the offending line

    @property
    def is_syntax_error(self) -> bool:
        return self.type in SYNTAX_ERRORS

    def to_json(self) -> JSONObject:
        record: dict = {"kind": self.kind.value, "type": self.type, "message": self.message,
                        "where": [[f.filename, f.line, f.function, f.source] for f in self.where]}
        if self.line is not None or self.offset is not None or self.text:
            record.update(line=self.line, offset=self.offset, text=self.text)
        return record

    @classmethod
    def from_json(cls, record: Any) -> "WorkerError":
        """A worker's error record as the grader may use it: typed, clipped fields; strings made
        safe where they enter (control characters and lone surrogates escaped, bytes capped)."""
        if not isinstance(record, dict) or not set(record) <= _ERROR_FIELDS:
            raise WireError("malformed reply")
        for key in ("kind", "type", "message", "text"):
            if key in record and not isinstance(record[key], str):
                raise WireError(f"malformed error record ({key})")
        for key in ("line", "offset"):
            if record.get(key) is not None and type(record[key]) is not int:
                raise WireError(f"malformed error record ({key})")
        try:
            kind = ErrorKind(record.get("kind", ErrorKind.EXCEPTION.value))
        except ValueError:
            raise WireError("malformed error record (kind)") from None
        return cls(kind=kind, type=textsafe.one_line(record.get("type", ""), 100),
                   message=textsafe.text(record.get("message", ""), _MAX_ERROR_BYTES),
                   where=_frames(record.get("where", [])), line=record.get("line"),
                   offset=record.get("offset"), text=textsafe.text(record.get("text", ""), _MAX_ERROR_BYTES))


_ERROR_FIELDS = {"kind", "type", "message", "where", "line", "offset", "text"}


def _frames(value: Any) -> tuple[Frame, ...]:
    if not isinstance(value, list):
        raise WireError("malformed error record (where)")
    frames = []
    for frame in value[-_MAX_FRAMES:]:
        if not (isinstance(frame, list) and len(frame) == 4 and isinstance(frame[0], str)
                and (frame[1] is None or type(frame[1]) is int)
                and isinstance(frame[2], str) and isinstance(frame[3], str)):
            raise WireError("malformed error record (where)")
        frames.append(Frame(textsafe.one_line(frame[0], 300), frame[1], textsafe.one_line(frame[2], 100),
                            textsafe.one_line(frame[3], 300)))
    return tuple(frames)


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ReachIn:
    """A student file reaching into the kit, noticed by the worker's audit hook (reachin.py)."""
    event: str
    filename: str
    line: int


_MAX_REACH_RECORDS = 20


@dataclass(frozen=True)
class Reply:
    """One answer: an encoded ``value`` (decode it with wire.Decoder and ``buffers``) or an
    ``error``; and the reach-ins noticed while answering. ``note``: with a value, an error
    that did not stop the request (a notebook cell that raised: that cell ended, the others ran)."""
    value: Any = None
    error: WorkerError | None = None
    buffers: tuple[bytes, ...] = ()
    reach: tuple[ReachIn, ...] = ()
    note: WorkerError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_frame(self) -> tuple[dict, list[bytes]]:
        header: dict = {"error": self.error.to_json()} if self.error else {"ok": self.value}
        if self.note is not None and self.error is None:
            header["note"] = self.note.to_json()
        if self.reach:
            header["reach"] = [[r.event, r.filename, r.line] for r in self.reach]
        return header, list(self.buffers)

    @classmethod
    def from_frame(cls, header: JSONObject, buffers: list[bytes]) -> "Reply":
        """A worker's reply frame, checked (``WireError`` when it breaks the format)."""
        header = dict(header)
        reach = _reach_records(header.pop("reach")) if "reach" in header else ()
        note = WorkerError.from_json(header.pop("note")) if "note" in header and "ok" in header else None
        if set(header) == {"ok"}:
            return cls(value=header["ok"], buffers=tuple(buffers), reach=reach, note=note)
        if set(header) != {"error"}:
            raise WireError("malformed reply")
        return cls(error=WorkerError.from_json(header["error"]), reach=reach)


def _reach_records(value: Any) -> tuple[ReachIn, ...]:
    if not isinstance(value, list) or len(value) > _MAX_REACH_RECORDS:
        raise WireError("malformed reach-in records")
    out = []
    for record in value:
        if (not isinstance(record, list) or len(record) != 3 or not isinstance(record[0], str)
                or not isinstance(record[1], str) or type(record[2]) is not int):
            raise WireError("malformed reach-in record")
        out.append(ReachIn(textsafe.one_line(record[0], 40), textsafe.one_line(record[1], 200), record[2]))
    return tuple(out)


# --------------------------------------------------------------------------- start-up


@dataclass(frozen=True)
class Ready:
    """A worker's last word before it serves: what its start-up achieved."""
    network_blocked: bool = False
    root: str = "shared"         # how its root was made: "pivot_root" | "chroot" | "hidden" | "shared"
    syscall_filter: bool = False
    files_restricted: bool = False   # a file-system ruleset of its own (Landlock)

    def to_json(self) -> JSONObject:
        return {"ready": True, "network_blocked": self.network_blocked, "root": self.root,
                "syscall_filter": self.syscall_filter, "files_restricted": self.files_restricted}

    @classmethod
    def from_json(cls, header: JSONObject) -> "Ready":
        if header.get("ready") is not True:
            raise WireError("the worker did not say it was ready")
        return cls(network_blocked=header.get("network_blocked") is True,
                   root=textsafe.one_line(str(header.get("root", "shared")), 20),
                   syscall_filter=header.get("syscall_filter") is True,
                   files_restricted=header.get("files_restricted") is True)
