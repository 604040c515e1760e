"""Run student code in a locked-down worker process and talk to it with plain data.

Grader side:   Sandbox (session.py), Remote / fetch (proxy.py), errors (errors.py),
               how workers start (backends.py: forkserver.py, spawn.py, in-process)
Worker side:   worker.py (dispatch), forkserver.py (start-up), isolation.py (lock-down by level)
Both:          wire.py (JSON + raw buffers; no pickle), protocol.py (the messages, typed)

The names below are loaded on first use (PEP 562): ``from autograder.sandbox import
SandboxConfig`` must work on Windows and macOS and without importing torch, for the
student-side ``check`` command. Only the modules a name lives in are imported.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

_WHERE = {
    "ExerciseUnavailable": "errors", "NotImplementedByStudent": "errors", "StudentError": "errors",
    "SandboxUnavailable": "errors",
    "UnsupportedValue": "errors", "WorkerCrashed": "errors",
    "SandboxConfig": "limits",
    "Remote": "proxy", "StudentModules": "proxy", "fetch": "proxy",
    "support_root": "proxy",
    "ModuleSource": "session", "Sandbox": "session",
}

__all__ = sorted(_WHERE)

# As root, the worker runs as another user and must not need the grader's HOME: point
# matplotlib's and torch's config and caches at a folder anyone may read, before they are
# imported (matplotlib fixes its folder at import). Nothing happens when not root.
if "matplotlib" not in sys.modules:
    from autograder.sandbox.grader_home import prepare_grader_home
    prepare_grader_home()


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'autograder.sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"autograder.sandbox.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
