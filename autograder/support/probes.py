"""Contract probes around student functions, run inside the worker.

Two rules of the contract can only be observed next to the student's code:

* inputs are never modified in place, whatever kind of input arrives: a tensor that
  shares its memory with a NumPy array (``torch.from_numpy``) or one that requires grad
  cannot cross the process boundary as such, so it is made here from plain data;
* torch functions keep the input's device: tensors on PyTorch's ``meta`` device (shapes
  and dtypes, no values; present on every machine) are made here and the result is
  described as data (a meta tensor has no values to send back).

Everything returns plain data. Nothing here knows an expected value: the grading process
makes every judgement.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Callable

import numpy as np
import torch

from autograder.contract import EXERCISES
from autograder.sandbox.wire import tensor_values


__all__ = ["call_unchanged", "on_meta", "KINDS"]

# how an input reaches the student's function
KINDS = ("ndarray", "tensor", "shared", "grad")


def _snapshot(value: Any) -> np.ndarray | None:
    """``value``'s values as a NumPy copy (None: not an array, or a tensor whose class was
    changed, which the grader counts as changed): read with torch's own C methods
    (``wire.tensor_values``), never with the tensor's attributes."""
    if isinstance(value, torch.Tensor):
        values = tensor_values(value)
        return None if values is None else values.numpy()
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    return None


def _as_kind(value: Any, kind: str) -> tuple[Any, list[Any]]:
    """``value`` as an input of ``kind``, and the objects whose values must not change."""
    if not isinstance(value, (np.ndarray, torch.Tensor)):
        return value, []
    array = value.detach().cpu().numpy().copy() if isinstance(value, torch.Tensor) else np.array(value)
    if kind == "ndarray":
        return array, [array]
    if kind == "shared":
        tensor = torch.from_numpy(array)            # shares memory with `array`
        return tensor, [tensor, array]
    tensor = torch.tensor(array, device="cpu")     # never the default device a student file set
    if kind == "grad" and tensor.is_floating_point():
        tensor.requires_grad_(True)
    return tensor, [tensor]


def _nonfinite(value: Any, depth: int = 0) -> bool:
    """Whether a result holds NaN or inf anywhere a number is due: arrays and tensors, inside
    tuples, lists and dicts, and the data a returned matplotlib Axes or Figure draws. A rule
    (inputs left alone, the device kept) is judged on a working call: a file that returns
    NaN of the right shapes implements nothing and must not pass it."""
    if depth > 4:
        return False
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, torch.Tensor):
        return value.device.type != "meta" and value.is_floating_point() and \
            not bool(torch.isfinite(value.detach()).all())
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return any(_nonfinite(v, depth + 1) for v in value.flat)
        return value.dtype.kind in "fc" and not bool(np.isfinite(value).all())
    if isinstance(value, (tuple, list)):
        return any(_nonfinite(v, depth + 1) for v in value[:64])
    if isinstance(value, dict):
        return any(_nonfinite(v, depth + 1) for v in list(value.values())[:64])
    if hasattr(value, "get_images") and hasattr(value, "collections"):      # a matplotlib Axes
        drawn = [im.get_array() for im in value.get_images()]
        drawn += [c.get_array() for c in value.collections if hasattr(c, "get_array")]
        return any(_nonfinite(np.ma.filled(np.ma.asarray(d, dtype=float), np.nan), depth + 1)
                   for d in drawn if d is not None)
    if hasattr(value, "savefig") and hasattr(value, "axes"):               # a matplotlib Figure
        return any(_nonfinite(ax, depth + 1) for ax in value.axes)
    return False


def _useful(value: Any, depth: int = 0) -> bool:
    """Whether a result holds something a function of the contract returns: a number, an
    array or tensor, or a matplotlib drawing (within tuples, lists and dicts, 3 levels deep)."""
    if isinstance(value, (bool, int, float, np.ndarray, torch.Tensor)) or hasattr(value, "get_images") \
            or hasattr(value, "savefig"):
        return True
    if depth >= 3:
        return False
    if isinstance(value, (tuple, list)):
        return any(_useful(v, depth + 1) for v in value[:64])
    if isinstance(value, dict):
        return any(_useful(v, depth + 1) for v in list(value.values())[:64])
    return False


def _strings(value: Any, depth: int = 0) -> list[str]:
    """The strings in nested lists/tuples (a list of token lists), at most 200 of 64 chars."""
    if isinstance(value, str):
        return [value[:64]]
    if depth > 2 or not isinstance(value, (list, tuple)):
        return []
    return [s for v in value[:100] for s in _strings(v, depth + 1)][:200]


def _error(exc: BaseException) -> dict[str, Any]:
    """The error as data: its type, its message's first line and the student's frames
    (``where``: [file name, line, function, source line], the last few), so that the grader can
    name the mistake from the student's own lines."""
    return {"type": type(exc).__name__, "message": str(exc).splitlines()[0][:300] if str(exc) else "",
            "where": _student_frames(exc)}


def _student_frames(exc: BaseException | None, limit: int = 6) -> list[list]:
    """The frames in the student's files of ``exc``'s traceback (None: of the current stack)."""
    import os
    import traceback

    names = {ex.filename for ex in EXERCISES}
    kit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    summary = traceback.extract_tb(exc.__traceback__) if exc is not None else traceback.extract_stack()
    frames = [[os.path.basename(f.filename), f.lineno, str(f.name)[:80], (f.line or "")[:200]]
              for f in summary
              if os.path.basename(f.filename) in names and not os.path.abspath(f.filename).startswith(kit)]
    return frames[-limit:]


def call_unchanged(fn: Callable, args: list, kwargs: dict | None = None, kind: str = "tensor",
                   which: list[int] | None = None) -> dict[str, Any]:
    """Call ``fn(*args, **kwargs)`` with ``args[i]`` (``i`` in ``which``, default every
    array/tensor) turned into inputs of ``kind`` (see ``KINDS``), and report what the grader
    needs to judge the call.

    Returns ``{"after": [per positional argument: the NumPy values, after the call, of the
    objects made from it (for ``"shared"`` the tensor and the NumPy array it shares memory
    with; none for an argument left as it was)], "error": None or {"type", "message"},
    "nonfinite": whether the result holds NaN or inf, "strings": the (up to 200) strings in a
    result of nested lists, "useful": whether it holds a number, array, tensor or drawing at
    all}``. The grader compares ``after`` with the values it sent (a snapshot kept here could
    be rewritten by the student's code). ``NotImplementedError`` propagates (the stub's message).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown input kind {kind!r}")
    args = list(args)
    which = list(range(len(args))) if which is None else which
    watched: list[tuple[Any, ...]] = [() for _ in args]
    for i in which:
        args[i], objects = _as_kind(args[i], kind)
        watched[i] = tuple(objects)
    watched = tuple(watched)
    error, nonfinite, strings, useful = None, False, [], True
    try:
        result = fn(*args, **dict(kwargs or {}))
        nonfinite, strings, useful = _nonfinite(result), _strings(result), _useful(result)
    except NotImplementedError:
        raise
    except Exception as exc:                          # reported, judged by the grader
        error = _error(exc)
    after = [[_snapshot(obj) for obj in objects] for objects in watched]
    return {"after": after, "error": error, "nonfinite": nonfinite, "strings": strings, "useful": useful}


def _describe(value: Any) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        return {"type": "Tensor", "device": value.device.type, "dtype": str(value.dtype).removeprefix("torch."),
                "shape": list(value.shape), "requires_grad": bool(value.requires_grad)}
    return {"type": type(value).__name__}


class _MixedDevices:
    """A dispatch mode that notes the first operation given tensors on two devices.

    Meta kernels do not check every operand's device (an embedding looked up with CPU
    indices in a meta table runs; on a GPU it raises), so the probe checks them itself.
    0-dim CPU tensors (scalars) and CPU index tensors are allowed with a GPU tensor, so here too.
    """

    ALLOWED = ("aten::index.Tensor", "aten::index_put", "aten::_index_put_impl_", "aten::_to_copy",
               "aten::copy_")

    def __new__(cls):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        class Mode(TorchDispatchMode):
            mixed: str | None = None
            where: list = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                name = str(func._schema.name) + ("." + func._overloadname if func._overloadname != "default" else "")
                if self.mixed is None and not name.startswith(cls.ALLOWED):
                    devices = {a.device.type for a in tree_leaves((args, kwargs))
                               if isinstance(a, torch.Tensor) and a.dim() > 0}
                    if len(devices) > 1:
                        self.mixed = f"{name} got tensors on {' and '.join(sorted(devices))}"
                        self.where = _student_frames(None)
                return func(*args, **kwargs)

        return Mode()


def on_meta(target: Any, args: list, kwargs: dict | None = None, which: list[int] | None = None,
            method: str | None = None, dtype: str | None = None) -> dict[str, Any]:
    """Call ``target`` (or its ``method``) with ``args[i]`` (``i`` in ``which``, default every
    tensor/array) as tensors on the ``meta`` device; an ``nn.Module`` target is moved to
    ``meta`` first (``dtype``: cast to it too, e.g. ``"float64"``).

    Returns ``{"outputs": [{"type", "device", "dtype", "shape", "requires_grad"} per output],
    "error": None or {"type", "message"}, "nonfinite": whether the same call on the CPU
    returned NaN or inf (None when it raised there)}``.
    """
    args = list(args)
    which = [i for i, a in enumerate(args) if isinstance(a, (np.ndarray, torch.Tensor))] \
        if which is None else which
    nonfinite = _nonfinite_on_cpu(target, args, kwargs, which, method, dtype)
    for i in which:
        args[i] = torch.as_tensor(args[i]).detach().to("meta")
    try:
        if isinstance(target, torch.nn.Module):
            target.to("meta")
            if dtype is not None:
                target.to(getattr(torch, dtype))
        fn = getattr(target, method) if method else target
        mode = _MixedDevices()
        with mode:
            result = fn(*args, **dict(kwargs or {}))
    except NotImplementedError as exc:
        if "meta" not in str(exc):                    # the stub's own; not a value read on meta
            raise
        return {"outputs": [], "error": _error(exc)}
    except Exception as exc:
        return {"outputs": [], "error": _error(exc)}
    if mode.mixed:
        return {"outputs": [], "error": {"type": "RuntimeError", "message": "Expected all tensors to be on "
                                         f"the same device (meta stands for the GPU here), but {mode.mixed}",
                                         "where": mode.where}}
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    return {"outputs": [_describe(o) for o in outs], "error": None, "nonfinite": nonfinite}


def _copy_of(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``module``; the module itself where it cannot be copied."""
    try:
        return copy.deepcopy(module)
    except Exception:  # noqa: BLE001 - a student module that refuses to be copied is called as it is
        return module


def _nonfinite_on_cpu(target: Any, args: list, kwargs: dict | None, which: list[int],
                      method: str | None, dtype: str | None) -> bool | None:
    """The meta call has no values: the same call on the CPU tells whether it works at all. A
    module is called as a copy: what a call keeps on the module (position ids or a mask made on
    the CPU) must not reach the meta call, which then judges the module as the test built it."""
    if isinstance(target, torch.nn.Module):
        target = _copy_of(target)
    cpu_args = list(args)
    for i in which:
        cpu_args[i] = torch.as_tensor(cpu_args[i]).detach().clone()
    try:
        if isinstance(target, torch.nn.Module) and dtype is not None:
            target.to(getattr(torch, dtype))
        fn = getattr(target, method) if method else target
        return _nonfinite(fn(*cpu_args, **dict(kwargs or {})))
    except NotImplementedError:
        raise
    except Exception:                                 # the meta call's error is the one judged
        return None
