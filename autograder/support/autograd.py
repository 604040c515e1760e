"""Autograd and side-effect probes around student functions, run inside the worker.

Gradients do not cross the process boundary (tensors arrive without their graph), so a
test that needs ``d(sum(g * f(x)))/dx`` through a student function asks the worker to
build the graph here, next to the student's code, and gets plain tensors back.

Everything returns plain data (tensors, arrays, bools, floats, lists, dicts). Nothing
here knows an expected value: the grading process makes every judgement. Whether a call
modified its inputs is judged there too (``contract_rules.call_and_check_unchanged``): a snapshot
kept here, in the process that runs the student's code, could be rewritten by that code
(it can walk up its callers' frames to the snapshot); the grader's own copies cannot.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograder.sandbox.wire import tensor_values

__all__ = ["grads", "call_returning_arguments", "call_and_check_aliasing"]


def _outputs(result: Any) -> list:
    """The student's result as a list of outputs (a tuple/list, or a single value)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def grads(fn: Callable, args: list, kwargs: dict | None = None,
          grad_outputs: list | None = None, wrt: list[int] | None = None) -> dict[str, Any]:
    """Backpropagate ``sum_i sum(out_i * grad_outputs[i])`` through ``fn(*args, **kwargs)``.

    Fresh copies of ``args[i]`` for ``i`` in ``wrt`` (default: every floating tensor
    argument) are made to require grad; the other arguments are passed as given.
    ``grad_outputs[i]`` pairs with output ``i`` (``None`` skips that output); by default
    only the first output is used, with a tensor of ones.

    Returns a dict:
        ``outputs``: the outputs, detached (a list, even for a single output)
        ``requires_grad``: for each output, whether it is a tensor attached to the graph
        ``grads``: for each index in ``wrt``, the gradient tensor, or ``None`` when no
            gradient reached that argument
        ``error``: ``None``, or a short text when backpropagation itself failed
    """
    kwargs = dict(kwargs or {})
    args = list(args)
    if wrt is None:
        wrt = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
    leaves = {}
    for i in wrt:
        leaf = args[i].detach().clone().requires_grad_(True)
        leaves[i] = leaf
        args[i] = leaf
    outs = _outputs(fn(*args, **kwargs))
    attached = [isinstance(o, torch.Tensor) and o.requires_grad for o in outs]
    if grad_outputs is None:
        grad_outputs = [None] * len(outs)
        if outs and isinstance(outs[0], torch.Tensor):
            grad_outputs[0] = torch.ones_like(outs[0])
    result: dict[str, Any] = {
        "outputs": [o.detach() if isinstance(o, torch.Tensor) else o for o in outs],
        "requires_grad": attached,
        "grads": [None] * len(wrt),
        "error": None,
    }
    total = None
    for out, g, ok in zip(outs, grad_outputs, attached):
        if g is None or not ok:
            continue
        g = torch.as_tensor(g, dtype=out.dtype, device=out.device)
        if tuple(g.shape) != tuple(out.shape):
            continue                                  # the grader reports wrong shapes itself
        term = (out * g).sum()
        total = term if total is None else total + term
    if total is None:
        return result
    try:
        got = torch.autograd.grad(total, [leaves[i] for i in wrt], allow_unused=True)
    except RuntimeError as exc:                       # e.g. an in-place op broke the graph
        result["error"] = str(exc).splitlines()[0][:300]
        return result
    result["grads"] = [None if g is None else g.detach() for g in got]
    return result


def _copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return tensor_values(value)
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    return None


def largest_change(before: Any, after: Any) -> float:
    """Largest absolute change between two snapshots (``inf`` when the shape changed)."""
    if before is None:
        return 0.0
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape:
            return math.inf
        before, after = before.detach().cpu().numpy(), after.detach().cpu().numpy()
    if not isinstance(after, np.ndarray) or after.shape != before.shape:
        return math.inf
    if before.dtype == bool or after.dtype == bool or before.dtype.kind in "iu":
        return float((before != after).sum())
    a, b = before.astype(np.float64), after.astype(np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if same.all():
        return 0.0
    diff = np.abs(a - b)
    diff[~np.isfinite(diff)] = math.inf
    return float(diff[~same].max())


def call_returning_arguments(fn: Callable, args: list, kwargs: dict | None = None) -> tuple:
    """Call ``fn(*args, **kwargs)``; return ``(result, after)``: ``after`` holds each array or
    tensor argument (positional, then keyword, in the given order) as it is after the call,
    and None for other arguments. The grader compares them with the values it sent."""
    kwargs = dict(kwargs or {})
    items = (*args, *kwargs.values())
    result = fn(*args, **kwargs)
    return result, [_copy(v) for v in items]


def _memory_of(value: Any) -> tuple[int, int] | None:
    """(start, end) of an array's or tensor's memory, or None."""
    if isinstance(value, torch.Tensor) and value.device.type == "cpu" and value.numel():
        start = value.data_ptr()
        return start, start + value.untyped_storage().nbytes()
    if isinstance(value, np.ndarray) and value.size:
        start = value.__array_interface__["data"][0]
        return start, start + value.nbytes
    return None


def call_and_check_aliasing(fn: Callable, args: list, kwargs: dict | None = None) -> tuple:
    """Call ``fn(*args, **kwargs)`` and report, for each positional then keyword argument,
    whether the result IS that argument or shares memory with it (a view of it).

    Returns ``(result, aliases)`` with one bool per argument (non-array arguments: False).
    """
    kwargs = dict(kwargs or {})
    items = list(args) + list(kwargs.values())
    result = fn(*args, **kwargs)
    outputs = _outputs(result)
    aliases = []
    for item in items:
        mine = _memory_of(item)
        shared = any(o is item for o in outputs)
        if mine is not None and not shared:
            for out in outputs:
                theirs = _memory_of(out)
                if theirs is not None and theirs[0] < mine[1] and mine[0] < theirs[1]:
                    shared = True
        aliases.append(shared)
    return result, aliases

