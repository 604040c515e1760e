"""Judging the contract's general rules for any function (grader side; not a test file).

The probes run in the worker (``autograder.support.probes``): inputs of each kind made
there (a tensor sharing memory with a NumPy array, a tensor requiring grad), and tensors
on PyTorch's ``meta`` device (shapes and dtypes, no values, on every machine). The
judgement and the message are made here; messages name the rule and the function.
"""
from __future__ import annotations

from typing import Any

from autograder.diagnosis.errors import cause_of_error
from autograder.suites import checks

KIND_TEXT = {
    "ndarray": "a NumPy array",
    "tensor": "a tensor",
    "shared": "a tensor sharing memory with a NumPy array (torch.from_numpy / torch.as_tensor)",
    "grad": "a tensor that requires grad",
}
IN_PLACE = ("an in-place operation on an input (x -= m, Q /= √d_k, masked_fill_, x[...] = …, or "
            "writing through .numpy() / np.asarray(x), which share the tensor's memory): work on "
            "new arrays/tensors, e.g. x = x - m")
META = ("PyTorch's meta device holds shapes and dtypes but no values: it stands for any device "
        "other than the CPU (a GPU)")
DEVICE_CAUSE = ("a tensor is created on the default device (torch.ones(n, n), torch.arange(n), "
                "torch.tril(torch.ones(...)), torch.tensor(...)) without device=x.device: create new "
                "tensors on the input's device (device=x.device) or derive them from the input")
FILL_CAUSE = ("a fill value given as a tensor made on the CPU (masked_fill(mask, torch.tensor(-1e9))): "
              "give it as a Python float, masked_fill(~mask, float('-inf'))")
VALUES_CAUSE = ("a value is read out of a tensor on the computation path (.item(), .numpy(), .tolist(), "
                "float(...), bool(...), `if tensor...`): torch functions must work on any device with "
                "torch operations only")


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
                    IN_PLACE if in_place else cause_of_error(error["type"], error["message"]))
    if report.get("nonfinite"):
        checks.fail(f"{what} returned NaN or inf for finite inputs ({KIND_TEXT[kind]}): this rule is "
                    "judged on a call that works")
    if tokens is None and not report.get("useful", True):
        checks.fail(f"{what} returned no number, array, tensor or figure ({KIND_TEXT[kind]}): this rule is "
                    "judged on a call that works")
    if tokens is not None and (not report["strings"] or not set(report["strings"]) <= set(tokens)):
        checks.fail(f"{what} returned strings other than the given tokens ({KIND_TEXT[kind]}): this rule "
                    "is judged on a call that works")
    touched = [n for n, c in zip(names, report["changes"]) if not c == 0.0]
    if touched:
        checks.fail(f"{what} modified its input{'s' if len(touched) > 1 else ''} {', '.join(touched)} "
                    f"in place ({KIND_TEXT[kind]})", IN_PLACE)


def expect_on_meta(support: Any, target: Any, what: str, args: list, *, outputs: list[str],
                   dtype: str, shapes: list[tuple[int, ...]] | None = None, kwargs: dict | None = None,
                   which: list[int] | None = None, method: str | None = None,
                   module_dtype: str | None = None, device_cause: str | None = None) -> list[dict]:
    """``target(*args)`` with its tensors (and an ``nn.Module`` target) on the meta device
    returns ``outputs`` (names) as tensors on meta, of ``dtype`` (``"bool"``, ``"float32"``…)
    and ``shapes`` when given; ``device_cause``: the likely cause of a result on another device."""
    with checks.calling(what):
        report = support.probes.on_meta(target, args, kwargs or {}, which, method, module_dtype)
    error = report["error"]
    if error:
        text = f"{error['type']}: {error['message']}"
        lower = text.lower()
        if "`value` to be on same device" in text:
            cause = FILL_CAUSE
        elif any(w in lower for w in ("meta tensor", "data-dependent", "to numpy", "register_meta")):
            cause = VALUES_CAUSE
        elif "device" in lower and "meta" in lower:
            cause = DEVICE_CAUSE
        else:                                         # not about the device: the usual causes
            checks.fail(f"{what} raised {text[:300]} (with its tensors on PyTorch's meta device)",
                        cause_of_error(error["type"], error["message"]))
        checks.fail(f"{what} does not keep the device: with its tensors on PyTorch's meta device it raised "
                    f"{text[:300]} ({META})", cause)
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
                        device_cause or "the result is moved or created on the CPU (.cpu(), "
                        "torch.tensor(...), torch.from_numpy(...)): keep it on the input's device")
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
