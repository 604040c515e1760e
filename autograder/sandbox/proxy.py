"""Grader-side stand-ins for objects in the worker.

``Remote`` records an attribute path lazily (``student.multihead.MultiHeadAttention``) and
sends one typed request (:mod:`protocol`) through a :class:`~autograder.sandbox.session.Channel`
when called or fetched. Results come back as fresh data or as new ``Remote`` handles. A
``Remote`` never compares, iterates or converts implicitly, so a test cannot mistake a handle
for a value.
"""
from __future__ import annotations

from typing import Any

from autograder.jsontypes import JSONObject
from autograder.sandbox import protocol, wire
from autograder.sandbox.errors import (NotImplementedByStudent, StudentError,
                                       UnsupportedValue, describe_error)
from autograder.sandbox.session import Channel


class Remote:
    __slots__ = ("_channel", "_ref", "_module", "_generation", "_label")

    def __init__(self, channel: Channel, ref: protocol.Ref, module: str | None = None,
                 label: str = "", generation: int | None = None):
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_generation", channel.generation if generation is None else generation)

    def __getattr__(self, name: str) -> "Remote":
        if name.startswith("__"):
            raise AttributeError(name)
        return Remote(self._channel, self._ref.attr(name), self._module,
                      f"{self._label}.{name}" if self._label else name, self._generation)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("worker objects are read-only from the grader")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refs: list[protocol.Ref] = []
        encoder = wire.Encoder(to_ref=_collect_refs(refs))
        call = protocol.Call(self._checked_ref(), encoder.encode(list(args)), encoder.encode(dict(kwargs)),
                             tuple(encoder.buffers), tuple(refs))
        return _request(self, call)

    def __iter__(self):
        raise TypeError(f"{self._label} is an object in the student's worker; use fetch() or call it")

    def __bool__(self) -> bool:
        # A handle is not a value: without this every handle would be truthy, so a student
        # returning any callable object would pass `assert student.f(...)`.
        raise TypeError(f"{self._label} is an object in the student's worker, not a value; "
                        "it has no truth value")

    def __repr__(self) -> str:
        return f"<worker object {self._label or self._ref.key}>"

    def _checked_ref(self) -> protocol.Ref:
        """This object's reference, if it still names something in the worker."""
        unavailable = self._channel.unavailable(self._module) if self._module is not None else None
        if unavailable is not None:
            # e.g. a student function handed to a support helper: report why the module is
            # unavailable, not "this object no longer exists in the worker"
            raise unavailable
        if self._generation != self._channel.generation and not self._ref.survives_restart:
            raise StudentError(f"{self._label} belonged to a worker that has since been restarted")
        return self._ref


def _collect_refs(found: list[protocol.Ref]):
    """The encoder's ``to_ref``: a ``Remote`` argument becomes its reference (remembered)."""
    def to_ref(obj: Any) -> dict | None:
        if not isinstance(obj, Remote):
            return None
        ref = obj._checked_ref()
        found.append(ref)
        return ref.to_json()
    return to_ref


def fetch(remote: Remote) -> Any:
    """Read the value of a worker attribute (data, or a new ``Remote`` for objects)."""
    return _request(remote, protocol.GetAttr(remote._checked_ref()))


def _request(remote: Remote, request: protocol.Call | protocol.GetAttr) -> Any:
    channel = remote._channel
    reply = channel.request(request, module=remote._module)
    label = remote._label or "the call"
    if reply.error is not None:
        message = describe_error(reply.error, what=label)
        if reply.error.kind is protocol.ErrorKind.NOT_IMPLEMENTED:
            raise NotImplementedByStudent(message, reply.error)
        if reply.error.kind is protocol.ErrorKind.UNENCODABLE:
            raise UnsupportedValue(message, reply.error)
        raise StudentError(message, reply.error)
    generation = channel.generation

    def from_handle(node: JSONObject) -> Remote:
        handle = protocol.Handle.from_json(node)
        return Remote(channel, handle.ref(), remote._module, f"{label}(…) [{handle.type}]", generation)

    try:
        return wire.Decoder(list(reply.buffers), from_handle=from_handle).decode(reply.value)
    except Exception as exc:            # any malformed value is a protocol error: that call fails
        reason = str(exc) if isinstance(exc, wire.WireError) else type(exc).__name__
        channel.discard_worker()        # it broke the protocol: not trusted again
        raise StudentError(f"{label} sent a reply the grader could not read ({reason})") from None


class StudentModules:
    """``student.attention`` etc.: the submission's modules, living in the worker."""

    def __init__(self, channel: Channel, names: list[str]):
        self._channel = channel
        self._names = set(names)

    def __getattr__(self, name: str) -> Remote:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(name)
        return Remote(self._channel, protocol.Ref.module(name), module=name, label=name)


def support_root(channel: Channel) -> Remote:
    """``support.figures.describe_axes`` etc.: the kit's pristine helpers, in the worker."""
    return Remote(channel, protocol.Ref.support(), module=None, label="support")
