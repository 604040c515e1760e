"""A Python outside ``/root`` with what grading and ``batch`` need, for the tests of the *user*
level and of a TA without root.

Gradescope's Python lives outside the grader's home; here the kit's venv lives under ``/root``
(mode 0700), which the worker user cannot read, so the user level refuses it. The tests that
grade at that level share one venv made from ``/usr/bin/python3.11`` (or whichever
``python3.N`` matches this interpreter), made on first use and reused afterwards. Test files
running at once (``pytest -n``) wait for each other on a lock while it is being made.

The venv gets the distributions of :data:`PACKAGES` and everything they require, at the versions
this interpreter's environment has, hard-linked from it (each distribution's ``RECORD``: its
modules, compiled bytecode and libraries; the same file system, so a second or two instead of
a minute of pip unpacking and compiling torch). Where that cannot be done (a distribution missing
or without ``RECORD``, another file system), pip installs them, torch as in the Makefile: the
CPU wheel from ``/opt/wheels`` when present, else from PyTorch's CPU index (never the CUDA
wheels).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

VENV = Path("/opt/agtest-venv")
PYTHON = VENV / "bin" / "python"
LOCK = Path("/opt/.agtest-venv.lock")
# what grading needs, and what a TA's `batch` adds (its progress bar, its report.html)
PACKAGES = ("torch", "numpy", "matplotlib", "pytest", "jsonschema", "tqdm", "jinja2")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _torch_requirement() -> list[str]:
    import torch
    version = torch.__version__.split("+")[0]
    wheels = sorted(Path("/opt/wheels").glob(f"torch-{version}+cpu-*.whl"))
    if wheels:
        return [str(wheels[0])]
    return [f"torch=={version}", "--extra-index-url", CPU_INDEX]


def _site_packages() -> Path:
    return VENV / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _link_distributions(target: Path) -> bool:
    """Hard-link :data:`PACKAGES`' distributions and what they require (found as the build
    pins Gradescope's: markers for this interpreter, no extras) from this interpreter's
    environment into ``target``; False, with ``target`` left to be removed, when one is missing
    or has no file list, or a file cannot be linked (another file system)."""
    from autograder.packaging.exports.gradescope import BuildError, grading_requirements
    try:
        names = grading_requirements(PACKAGES)
    except BuildError:
        return False
    for name in names:
        dist = metadata.distribution(name)
        if dist.files is None:
            return False
        for entry in dist.files:
            if entry.parts[0] == "..":                      # console scripts: not needed here
                continue
            source, destination = Path(entry.locate()), target / entry
            if not source.is_file():
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, destination)
            except FileExistsError:
                pass
            except OSError:
                return False
    return True


def outside_python() -> Path:
    """The venv's interpreter, made if missing (idempotent; a half-made venv, or one made for
    other :data:`PACKAGES`, is made again)."""
    ready, wanted = VENV / ".ready", " ".join(PACKAGES)
    if _made_for(ready) == wanted:
        return PYTHON
    base = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}",
                        path="/usr/bin:/usr/local/bin")
    if base is None or base.startswith("/root"):
        raise RuntimeError("the user-level tests need a Python outside /root "
                           f"(python{sys.version_info.major}.{sys.version_info.minor} in /usr/bin)")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _made_for(ready) != wanted:
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([base, "-m", "venv", "--without-pip", str(VENV)], check=True)
            if not _link_distributions(_site_packages()):
                shutil.rmtree(VENV, ignore_errors=True)
                subprocess.run([base, "-m", "venv", str(VENV)], check=True)
                subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", *_torch_requirement(),
                                *(p for p in PACKAGES if p != "torch")], check=True)
            os.chmod(VENV, 0o755)
            ready.write_text(wanted)
    return PYTHON


def _made_for(ready: Path) -> str | None:
    """The packages a finished venv was made for (None: not finished)."""
    try:
        return ready.read_text()
    except OSError:
        return None
