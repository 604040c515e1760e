"""Grader-side stand-ins for objects in the worker.

``Remote`` records an attribute path lazily (``student.multihead.MultiHeadAttention``) and
sends one request when called or fetched. Results come back as fresh data or as new
``Remote`` handles. A ``Remote`` never compares, iterates or converts implicitly, so a test
cannot mistake a handle for a value.
"""
from __future__ import annotations

from typing import Any

from autograder.sandbox import wire
from autograder.sandbox.errors import (ExerciseUnavailable, NotImplementedByStudent, StudentError,
                                       UnsupportedValue, describe_error)
from autograder.sandbox.session import Sandbox


class Remote:
    __slots__ = ("_sandbox", "_key", "_path", "_module", "_generation", "_label")

    def __init__(self, sandbox: Sandbox, key: str, path: tuple[str, ...] = (),
                 module: str | None = None, label: str = "", generation: int | None = None):
        object.__setattr__(self, "_sandbox", sandbox)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_generation",
                           sandbox.generation if generation is None else generation)

    def __getattr__(self, name: str) -> "Remote":
        if name.startswith("__"):
            raise AttributeError(name)
        return Remote(self._sandbox, self._key, self._path + (name,), self._module,
                      f"{self._label}.{name}" if self._label else name, self._generation)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("worker objects are read-only from the grader")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _request(self, "call", args, kwargs)

    def __iter__(self):
        raise TypeError(f"{self._label} is an object in the student's worker; use fetch() or call it")

    def __bool__(self) -> bool:
        # A handle is not a value: without this every handle would be truthy, so a student
        # returning any callable object would pass `assert student.f(...)`.
        raise TypeError(f"{self._label} is an object in the student's worker, not a value; "
                        "it has no truth value")

    def __repr__(self) -> str:
        return f"<worker object {self._label or self._key}>"

    def _ref(self) -> dict:
        sandbox = self._sandbox
        if self._module is not None and self._module in sandbox.load_errors:
            # e.g. a student function handed to a support helper: report why the module is
            # unavailable, not "this object no longer exists in the worker"
            raise ExerciseUnavailable(self._module, sandbox.load_errors[self._module])
        if self._generation != self._sandbox.generation and not self._key.startswith(("m:", "support")):
            raise StudentError(f"{self._label} belonged to a worker that has since been restarted")
        return {"R": self._key, "path": list(self._path)}


def fetch(remote: Remote) -> Any:
    """Read the value of a worker attribute (data, or a new ``Remote`` for objects)."""
    return _request(remote, "getattr")


def _request(remote: Remote, op: str, args: tuple = (), kwargs: dict | None = None) -> Any:
    sandbox: Sandbox = remote._sandbox
    encoder = wire.Encoder(to_ref=lambda o: o._ref() if isinstance(o, Remote) else None)
    header: dict = {"op": op, "target": remote._ref()}
    if op == "call":
        header["args"] = encoder.encode(list(args))
        header["kwargs"] = encoder.encode(dict(kwargs or {}))
    reply, buffers = sandbox.request(header, encoder.buffers, module=remote._module)
    label = remote._label or "the call"
    if "error" in reply:
        info = reply["error"] if isinstance(reply["error"], dict) else {}
        message = describe_error(info, what=f"{label}")
        if info.get("kind") == "not_implemented":
            raise NotImplementedByStudent(message, info)
        if info.get("kind") == "unencodable":
            raise UnsupportedValue(message, info)
        raise StudentError(message, info)
    generation = sandbox.generation

    def from_handle(node: dict) -> Remote:
        if not isinstance(node.get("H"), str):
            raise wire.WireError("malformed handle")
        type_name = str(node.get("type", "object"))[:80]
        return Remote(sandbox, node["H"], (), remote._module, f"{label}(…) [{type_name}]", generation)

    try:
        return wire.Decoder(buffers, from_handle=from_handle).decode(reply.get("ok"))
    except Exception as exc:            # any malformed value is a protocol error: that call fails
        reason = str(exc) if isinstance(exc, wire.WireError) else type(exc).__name__
        sandbox.discard_worker()    # it broke the protocol: not trusted again
        raise StudentError(f"{label} sent a reply the grader could not read ({reason})") from None


class StudentModules:
    """``student.attention`` etc.: the submission's modules, living in the worker."""

    def __init__(self, sandbox: Sandbox, names: list[str]):
        self._sandbox = sandbox
        self._names = set(names)

    def __getattr__(self, name: str) -> Remote:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(name)
        return Remote(self._sandbox, f"m:{name}", (), module=name, label=name)


def support_root(sandbox: Sandbox) -> Remote:
    """``support.figures.describe_axes`` etc.: the kit's pristine helpers, in the worker."""
    return Remote(sandbox, "support", (), module=None, label="support")
