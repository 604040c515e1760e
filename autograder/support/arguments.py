"""Arguments that cannot cross the process boundary as values, rebuilt inside the worker.

``torch.dtype`` and ``torch.device`` objects are not wire data (``sandbox/wire.py``), but a
contract may ask for them (``sinusoidal_encoding(…, dtype=torch.float64, device=…)``). A test
names them as strings and this helper builds the real objects next to the student's code.
Nothing here knows an expected value.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

__all__ = ["call"]


def _dtype(name: str) -> torch.dtype:
    value = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"not a torch dtype: {name!r}")
    return value


def call(fn: Callable, args: list | None = None, kwargs: dict | None = None,
         dtypes: dict[str, str] | None = None, devices: dict[str, str] | None = None) -> Any:
    """``fn(*args, **kwargs, **{k: torch.<dtypes[k]>}, **{k: torch.device(devices[k])})``.

    ``dtypes``/``devices`` map keyword names to ``"float64"`` / ``"cpu"``-style names.
    """
    extra: dict[str, Any] = {k: _dtype(v) for k, v in (dtypes or {}).items()}
    extra.update({k: torch.device(v) for k, v in (devices or {}).items()})
    return fn(*(args or []), **dict(kwargs or {}), **extra)
