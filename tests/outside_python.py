"""A Python outside ``/root`` with what grading needs, for the tests of the *user* level.

Gradescope's Python lives outside the grader's home; here the kit's venv lives under ``/root``
(mode 0700), which the worker user cannot read, so the user level refuses it. The tests that
grade at that level share one venv made from ``/usr/bin/python3.11`` (or whichever
``python3.N`` matches this interpreter), made on first use and reused afterwards. Test files
running at once (``pytest -n``) wait for each other on a lock while it is being made.

torch comes as in the Makefile: the CPU wheel from ``/opt/wheels`` when present, else from
PyTorch's CPU index (never the CUDA wheels).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

VENV = Path("/opt/agtest-venv")
PYTHON = VENV / "bin" / "python"
LOCK = Path("/opt/.agtest-venv.lock")
PACKAGES = ("numpy", "matplotlib", "pytest", "jsonschema")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _torch_requirement() -> list[str]:
    import torch
    version = torch.__version__.split("+")[0]
    wheels = sorted(Path("/opt/wheels").glob(f"torch-{version}+cpu-*.whl"))
    if wheels:
        return [str(wheels[0])]
    return [f"torch=={version}", "--extra-index-url", CPU_INDEX]


def outside_python() -> Path:
    """The venv's interpreter, made if missing (idempotent; a half-made venv is made again)."""
    ready = VENV / ".ready"
    if ready.exists():
        return PYTHON
    base = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}",
                        path="/usr/bin:/usr/local/bin")
    if base is None or base.startswith("/root"):
        raise RuntimeError("the user-level tests need a Python outside /root "
                           f"(python{sys.version_info.major}.{sys.version_info.minor} in /usr/bin)")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([base, "-m", "venv", str(VENV)], check=True)
            subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", *_torch_requirement(),
                            *PACKAGES], check=True)
            os.chmod(VENV, 0o755)
            ready.touch()
    return PYTHON
