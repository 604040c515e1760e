"""Run student code in a locked-down worker process and talk to it with plain data.

Grader side:   Sandbox (session.py), Remote / fetch (proxy.py), errors (errors.py)
Worker side:   worker.py (dispatch), forkserver.py (start-up), limits.py (lock-down)
Both:          wire.py (JSON + raw buffers; no pickle)
"""
from autograder.sandbox.errors import (ExerciseUnavailable, NotImplementedByStudent, StudentError,
                                       UnsupportedValue, WorkerCrashed)
from autograder.sandbox.limits import SandboxConfig
from autograder.sandbox.proxy import Remote, StudentModules, fetch, is_remote, support_root
from autograder.sandbox.session import ModuleSource, Sandbox

__all__ = ["ExerciseUnavailable", "ModuleSource", "NotImplementedByStudent", "Remote", "Sandbox",
           "SandboxConfig", "StudentError", "StudentModules", "UnsupportedValue", "WorkerCrashed",
           "fetch", "is_remote", "support_root"]
