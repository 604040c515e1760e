"""Hidden test inputs that a submission cannot predict: every seed is derived here.

A hidden test draws its inputs from seeds derived with HMAC-SHA256 from three things:

* a **secret**: ``autograder/SEED_SECRET`` (hex). ``build`` writes a fresh random one into
  every Gradescope zip (``build --seed-secret HEX`` pins it); like the rest of
  ``autograder/`` it is unreadable to the worker (the hidden folders at the namespaces level,
  ``harden.py`` at the user level). A checkout without one creates its own on first use
  (git-ignored, never shipped: ``build`` writes its own, ``release`` ships named files only);
  where it cannot be written (a read-only install) :data:`FALLBACK_SECRET`, a public value,
  is used and :func:`secret_origin` says so;
* the **submission**: the SHA-256 of the exercise's source as graded (after intake: a
  notebook's extracted code), so two submissions that differ see different inputs and the
  same submission regraded sees the same ones (per exercise: grading ``--exercises ex1``
  alone draws what a full grading draws);
* the **test**: its pytest node id (relative to the suites folder), or a name given by a
  session-scoped fixture (``seed(name="state")``), which is shared by the tests that use it.

The plugin (:mod:`autograder.plugin`) calls :func:`enter` before each test; suites then ask
:func:`seed`, :func:`rng` or :func:`generator` for an offset (``common.rng(offset)`` in a
suite keeps its old signature). The worker's global generators are reseeded before each
test with :func:`worker_seed`, a derived value too, so the worker cannot tell which test
calls it. Public tests (``suites/*/public/``) keep literal seeds; students reproduce them.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:                    # numpy/torch are imported where a generator is asked for
    import numpy as np
    import torch

SECRET_FILE = Path(__file__).with_name("SEED_SECRET")
SECRET_BYTES = 32
DOMAIN = b"attention-autograder/hidden-inputs/v1"
# Used only where no secret can be read or created (see the module docstring). Public: with
# it, hidden inputs still differ between submissions but no longer depend on a secret.
FALLBACK_SECRET = b"attention-autograder: public fallback, no secret available"
# Seeds lie in [0, SEED_RANGE): every API takes them (np.random.seed, torch.manual_seed,
# numpy's default_rng), and base + offset with offsets below 2**20 stays within int32.
SEED_RANGE = 2**31 - 2**20

_override: bytes | None = None


# --------------------------------------------------------------------------- the secret

def parse_secret(text: str) -> bytes:
    """A hex secret (``build --seed-secret``) as bytes; at least 16 bytes."""
    try:
        value = bytes.fromhex(text.strip())
    except ValueError:
        raise ValueError("the seed secret must be hexadecimal (e.g. 64 hex digits)") from None
    if len(value) < 16:
        raise ValueError("the seed secret must be at least 16 bytes (32 hex digits)")
    return value


def new_secret() -> str:
    """A fresh random secret, as hex."""
    return secrets.token_hex(SECRET_BYTES)


def load_secret() -> tuple[bytes, str]:
    """``(secret, origin)``; origin is "override", "file" (a build's or this checkout's),
    "created" (this checkout's, just made) or "fallback"."""
    if _override is not None:
        return _override, "override"
    return file_secret()


def file_secret() -> tuple[bytes, str]:
    """The secret of :data:`SECRET_FILE` whatever the override: a build's, or this checkout's,
    made now if it has none (``(secret, origin)`` as :func:`load_secret`)."""
    for _attempt in range(2):
        try:
            return parse_secret(SECRET_FILE.read_text(encoding="ascii")), "file"
        except FileNotFoundError:
            pass
        except (OSError, ValueError):
            return FALLBACK_SECRET, "fallback"
        text = new_secret()          # a checkout's first grading: make its own, whole or not at all
        tmp = SECRET_FILE.with_name(f".{SECRET_FILE.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(text + "\n")
            os.link(tmp, SECRET_FILE)   # fails if another grader (batch jobs) linked one first
        except FileExistsError:
            continue                 # read that one
        except OSError:
            return FALLBACK_SECRET, "fallback"
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return parse_secret(text), "created"
    return FALLBACK_SECRET, "fallback"


@contextmanager
def secret_override(secret: bytes | str | None) -> Iterator[None]:
    """Grade with ``secret`` in this process (the kit's tests, ``bench/seed_sweep.py``)."""
    global _override
    saved = _override
    _override = parse_secret(secret) if isinstance(secret, str) else secret
    try:
        yield
    finally:
        _override = saved


def secret_origin() -> str:
    """Where this process's secret comes from, in words (for logs)."""
    return {"override": "set by the caller", "file": f"{SECRET_FILE}", "created": f"{SECRET_FILE} (new)",
            "fallback": "PUBLIC FALLBACK (no secret could be read or created)"}[load_secret()[1]]


# --------------------------------------------------------------------------- derivation

def source_digest(source: str | None) -> bytes:
    """The SHA-256 of an exercise's source as graded (empty when there is none)."""
    return hashlib.sha256((source or "").encode("utf-8", "surrogatepass")).digest()


@dataclass
class Seeds:
    """One grading run's seeds: the secret, and each exercise's source digest."""
    secret: bytes
    digests: dict[str, bytes] = field(default_factory=dict)

    def derive(self, exercise: str, name: str, purpose: str = "inputs") -> int:
        """A seed in [0, SEED_RANGE) for ``name`` (a node id or fixture name) of ``exercise``."""
        message = b"\0".join((DOMAIN, purpose.encode(), exercise.encode(),
                              self.digests.get(exercise, source_digest(None)), name.encode()))
        mac = hmac.new(self.secret, message, hashlib.sha256).digest()
        return int.from_bytes(mac[:8], "big") % SEED_RANGE


def for_submission(submission, secret: bytes | None = None) -> Seeds:
    """:class:`Seeds` for an :class:`autograder.intake.Submission` (``None``: no sources)."""
    found = getattr(submission, "found", None) or {}
    return Seeds(secret if secret is not None else load_secret()[0],
                 {ex_id: source_digest(f.source) for ex_id, f in found.items()})


# --------------------------------------------------------------------------- the current test

@dataclass
class _Current:
    seeds: Seeds
    exercise: str
    nodeid: str


_current: _Current | None = None


def enter(seeds: Seeds, exercise: str, nodeid: str) -> None:
    """The test about to run (the plugin calls this before each test's set-up)."""
    global _current
    _current = _Current(seeds, exercise, nodeid)


def leave() -> None:
    global _current
    _current = None


def worker_seed(seeds: Seeds, exercise: str, nodeid: str) -> int:
    """The value the worker's global generators are reset to before test ``nodeid``."""
    return seeds.derive(exercise, nodeid, purpose="worker")


def seed(offset: int = 0, name: str | None = None) -> int:
    """The current test's seed number ``offset`` (or the one of the fixture ``name``)."""
    if _current is None:
        raise RuntimeError("hidden-input seeds are only available while the grading plugin runs a test")
    base = _current.seeds.derive(_current.exercise, name if name is not None else _current.nodeid)
    return (base + int(offset)) % SEED_RANGE


def rng(offset: int = 0, name: str | None = None) -> "np.random.Generator":
    """A NumPy generator for the current test's seed ``offset``."""
    import numpy as np
    return np.random.default_rng(seed(offset, name))


def generator(offset: int = 0, name: str | None = None) -> "torch.Generator":
    """A torch CPU generator for the current test's seed ``offset``."""
    import torch
    return torch.Generator().manual_seed(seed(offset, name))
