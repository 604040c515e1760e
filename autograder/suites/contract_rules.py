"""Judging the contract's general rules for any function (grader side; not a test file).

The probes run in the worker (``autograder.support.probes``): inputs of each kind made
there (a tensor sharing memory with a NumPy array, a tensor requiring grad), and tensors
on PyTorch's ``meta`` device (shapes and dtypes, no values, on every machine). The
judgement and the message are made here; messages name the rule and the function.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import torch

from autograder.diagnosis.causes import Cause, Diagnosis
from autograder.diagnosis.causes import General
from autograder.diagnosis.errors import cause_of_error, device_cause, frames_of
from autograder.suites import checks
from autograder.support.autograd import largest_change

KIND_TEXT = {
    "ndarray": "a NumPy array",
    "tensor": "a tensor",
    "shared": "a tensor sharing memory with a NumPy array (torch.from_numpy / torch.as_tensor)",
    "grad": "a tensor that requires grad",
}
META = ("PyTorch's meta device holds shapes and dtypes but no values: it stands for any device "
        "other than the CPU (a GPU)")
# an error about where tensors live (not, say, a missing `device` parameter: a TypeError)
_ABOUT_DEVICES = r"\bmeta\b|same device|expected device|to numpy|data-dependent|register_meta|device type"


def _cause(error: dict) -> Diagnosis | None:
    """The likely mistake behind a probe's error record (type, message, the student's frames)."""
    return cause_of_error(error["type"], error["message"], error.get("where"), checks.student_sources)


def call_and_check_unchanged(support: Any, fn: Any, args: list, kwargs: dict | None = None) -> tuple:
    """``fn(*args, **kwargs)`` called in the worker: ``(result, changes)``, ``changes`` holding,
    per positional then keyword argument, its largest absolute change (0.0: untouched or not an
    array; ``inf``: its shape changed; bool/int arrays: the number of changed entries).

    Judged here, in the grader: the worker sends back its arrays as they are after the call
    (``support.autograd.call_returning_arguments``) and they are compared with the values this
    process sent, which no student code can reach (a snapshot in the worker could be rewritten
    by the student's function, from its callers' frames)."""
    kwargs = dict(kwargs or {})
    result, after = support.autograd.call_returning_arguments(fn, list(args), kwargs)
    sent = [*args, *kwargs.values()]
    return result, [largest_change(s, a) if isinstance(s, (np.ndarray, torch.Tensor)) else 0.0
                    for s, a in zip(sent, after, strict=True)]


def _changed(sent: Any, after: list) -> bool:
    """Whether any object the worker made from ``sent`` (an array or tensor of this process)
    holds other values after the call (``after``: their NumPy values, from the probe)."""
    if not after:
        return False
    before = sent.detach().cpu().numpy() if isinstance(sent, torch.Tensor) else np.asarray(sent)
    return any(not largest_change(before, value) == 0.0 for value in after)


def kind_id(kind: str) -> str:
    return {"ndarray": "NumPy array", "tensor": "tensor", "shared": "tensor sharing memory with NumPy",
            "grad": "tensor requiring grad"}[kind]


def expect_inputs_unchanged(support: Any, fn: Any, what: str, args: list, names: list[str],
                            kind: str, kwargs: dict | None = None, which: list[int] | None = None,
                            tokens: list[str] | None = None) -> None:
    """``fn(*args)`` with the arrays ``args[i]`` (``i`` in ``which``) given as ``kind`` inputs
    modifies none of them (``names``: one per positional argument), runs, and returns no
    NaN/inf (with ``tokens``: returns only strings among them)."""
    with checks.calling(what):
        report = support.probes.call_unchanged(fn, args, kwargs or {}, kind, which)
    error = report["error"]
    if error:
        text = f"{error['type']}: {error['message']}"
        in_place = "in-place" in text or "inplace" in text
        checks.fail(f"{what} failed when its inputs are {KIND_TEXT[kind]}: {text[:300]}",
                    General.IN_PLACE if in_place else _cause(error))
    if report.get("nonfinite"):
        checks.fail(f"{what} returned NaN or inf for finite inputs ({KIND_TEXT[kind]}): this rule is "
                    "judged on a call that works")
    if tokens is None and not report.get("useful", True):
        checks.fail(f"{what} returned no number, array, tensor or figure ({KIND_TEXT[kind]}): this rule is "
                    "judged on a call that works")
    if tokens is not None and (not report["strings"] or not set(report["strings"]) <= set(tokens)):
        checks.fail(f"{what} returned strings other than the given tokens ({KIND_TEXT[kind]}): this rule "
                    "is judged on a call that works")
    afters = report["after"]
    if len(afters) != len(args):           # one per argument, always: else the worker was tampered with
        checks.fail(f"{what}: the worker's report on its inputs is malformed ({KIND_TEXT[kind]})")
    touched = [n for n, arg, after in zip(names, args, afters) if _changed(arg, after)]
    if touched:
        checks.fail(f"{what} modified its input{'s' if len(touched) > 1 else ''} {', '.join(touched)} "
                    f"in place ({KIND_TEXT[kind]})", General.IN_PLACE)


def expect_on_meta(support: Any, target: Any, what: str, args: list, *, outputs: list[str],
                   dtype: str, shapes: list[tuple[int, ...]] | None = None, kwargs: dict | None = None,
                   which: list[int] | None = None, method: str | None = None,
                   module_dtype: str | None = None, on_cpu_cause: Cause | None = None) -> list[dict]:
    """``target(*args)`` with its tensors (and an ``nn.Module`` target) on the meta device
    returns ``outputs`` (names) as tensors on meta, of ``dtype`` (``"bool"``, ``"float32"``…)
    and ``shapes`` when given; ``on_cpu_cause``: the likely cause of a result on another device."""
    with checks.calling(what):
        report = support.probes.on_meta(target, args, kwargs or {}, which, method, module_dtype)
    error = report["error"]
    if error:
        text = f"{error['type']}: {error['message']}"
        if error["type"] == "TypeError" or not re.search(_ABOUT_DEVICES, text, re.I):   # the usual causes
            checks.fail(f"{what} raised {text[:300]} (with its tensors on PyTorch's meta device)", _cause(error))
        checks.fail(f"{what} does not keep the device: with its tensors on PyTorch's meta device it raised "
                    f"{text[:300]} ({META})",
                    device_cause(error["message"], frames_of(error.get("where"), checks.student_sources)))
    if report.get("nonfinite"):
        checks.fail(f"{what} returned NaN or inf for finite inputs (on the CPU): the device rule is "
                    "judged on a call that works")
    got = report["outputs"]
    if len(got) < len(outputs):
        checks.fail(f"{what}: expected {len(outputs)} result(s) ({', '.join(outputs)}), got {len(got)}")
    for i, name in enumerate(outputs):
        out = got[i]
        if out["type"] != "Tensor":
            checks.fail(f"{what}: {name} should be a tensor, got {out['type']}")
        if out["device"] != "meta":
            checks.fail(f"{what} does not keep the device: with its inputs on PyTorch's meta device, {name} "
                        f"came back on {out['device']} ({META})",
                        on_cpu_cause or General.RESULT_ON_CPU)
        if out["dtype"] != dtype:
            checks.fail(f"{what}: {name} has dtype {out['dtype']}, expected {dtype} (with its inputs on "
                        f"the meta device)", checks.dtype_cause(_torch_dtype(out["dtype"]), _torch_dtype(dtype)))
        if shapes is not None and tuple(out["shape"]) != tuple(shapes[i]):
            checks.fail(f"{what}: {name} has shape {tuple(out['shape'])}, expected {tuple(shapes[i])} "
                        "(inputs on the meta device)")
    return got


def _torch_dtype(name: str) -> Any:
    import torch
    return getattr(torch, name, None)
