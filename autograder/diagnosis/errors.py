"""Naming the mistake behind an exception the student's code raised.

PyTorch's and NumPy's error messages describe the symptom (a dtype clash, a view on a
non-contiguous tensor, two shapes that do not match); the usual mistakes behind them are few
and well known. What is read, and nothing runs:

* the exception's type name and message;
* the student's frames of the traceback (``where``: file, line number, function, the line's
  source), the line that raised telling the operation (``@`` after ``.T``, indexing by a mask);
* when the student's file is given (``sources``), the body of each function on the traceback
  up to its line there: the line that made the mistake is often earlier than the one that
  raised (a mask unsqueezed before the ``masked_fill`` that fails, a buffer made on the CPU
  before the assignment that fails on another device).

A rule names a cause only when the evidence points to it; otherwise nothing is said.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Mapping

from autograder.diagnosis import causes
from autograder.diagnosis.causes import Cause, Diagnosis, General


@dataclass(frozen=True)
class Frame:
    """One of the student's frames: the line that ran (``line``) and its function's source from
    its ``def`` to that line (``body``; "" when the file's text is not known)."""
    line: str
    body: str


# --------------------------------------------------------------------------- message rules

_RULES: list[tuple[tuple[str, ...], str, Cause]] = [
    (("RuntimeError",), r"Can't call numpy\(\) on Tensor that requires grad", General.NUMPY_OF_GRAD_TENSOR),
    (("RuntimeError",), r"view size is not compatible with input tensor's size and stride",
     General.VIEW_AFTER_TRANSPOSE),
    (("RuntimeError",), r"expected (scalar type|m1 and m2 to have the same dtype|mat1 and mat2 to have the same "
                        r"dtype|both vectors to have same dtype)|(Double|Float|Half) but found (Double|Float|Half)"
                        r"|mat1 and mat2 must have the same dtype", General.DTYPE_MIX),
    (("TypeError",), r"~ \(operator\.invert\) is only implemented on integer and Boolean-type tensors"
                     r"|masked_fill_? only supports boolean masks|expected BoolTensor", General.MASK_NOT_BOOL),
    (("RuntimeError",), r"masked_fill_? only supports boolean masks|expected BoolTensor|Expected.*Bool",
     General.MASK_NOT_BOOL),
    (("RuntimeError",), r"a leaf Variable that requires grad is being used in an in-place operation",
     General.IN_PLACE),
    (("RuntimeError",), r"one of the variables needed for gradient computation has been modified by an inplace",
     General.IN_PLACE_NEEDED_BY_AUTOGRAD),
    (("TypeError",), r"got an unexpected keyword argument '\w+'", General.SIGNATURE_MISSING_PARAMETER),
    (("TypeError",), r"takes \d+ positional arguments? but \d+ (were|was) given", General.SIGNATURE_TOO_FEW_PARAMETERS),
    (("BannedAPIError",), r"", General.BANNED_API),
]

# --------------------------------------------------------------------------- shape errors

# The messages of a shape mismatch in a product or a broadcast (NumPy and PyTorch).
_SHAPE_MISMATCH = (r"matmul|mat1 and mat2 shapes cannot be multiplied|Expected size for first two dimensions"
                   r"|shapes .* not aligned|could not be broadcast|must match the size of tensor b"
                   r"|expanded size of the tensor|Attempting to broadcast|size mismatch|cannot be multiplied")
_SHAPE_ERROR = _SHAPE_MISMATCH + r"|too many values to unpack|not enough values to unpack"
_PRODUCT = r"@|matmul|\bmm\(|bmm\(|einsum|np\.dot|\.dot\("

# dV / dK computed without the transpose their formula needs (the line that raised says which).
_NO_TRANSPOSE = r"(\.T\b|\.mT\b|swapaxes|transpose|moveaxis|permute|einsum)"
# The patterns are an exercise's (``GRADIENT_LINES`` in its ``causes.py``): a line of code, and
# the cause a shape error raised on it names.


def _gradient_lines() -> list[tuple[str, Cause]]:
    return [line for module in causes.exercise_modules() for line in getattr(module, "GRADIENT_LINES", ())]

# A mask given an axis it does not need: mask.unsqueeze(…), mask[:, None], mask[None].
_MASK_EXTRA_AXIS = r"\b\w*mask\w*\s*\.unsqueeze_?\(|\b\w*mask\w*\s*\[\s*(?::\s*,\s*)*None\b"
# Indexing with a boolean mask whose shape is not the indexed array's.
_MASK_INDEX_MESSAGE = r"shape of the mask .* does not match|boolean index did not match"


def _code(line: str) -> str:
    return line.split("#")[0]


def _shape_cause(type_name: str, message: str, frames: list[Frame]) -> Cause | None:
    if not frames:
        return None
    last = _code(frames[-1].line)
    if type_name == "ValueError" and re.search(r"matmul|shapes .* not aligned|could not be broadcast", message) \
            and not re.search(_NO_TRANSPOSE, last):
        for pattern, cause in _gradient_lines():
            if re.search(pattern, last, re.I):
                return cause
    if type_name == "IndexError" and re.search(_MASK_INDEX_MESSAGE, message) and re.search(r"\[[^\]]*mask", last):
        return General.MASK_INDEXING
    if type_name in ("ValueError", "RuntimeError") and re.search(_SHAPE_MISMATCH, message) \
            and re.search(r"\.T\b", last) and re.search(_PRODUCT, last):
        return General.BATCHED_DOT_T
    if type_name in ("ValueError", "RuntimeError") and re.search(_SHAPE_ERROR, message) \
            and any(re.search(_MASK_EXTRA_AXIS, _code(line)) for f in frames for line in f.body.splitlines()):
        return General.MASK_EXTRA_AXIS
    return None


# --------------------------------------------------------------------------- the student's code

def function_body(source: str, line: int) -> str:
    """The innermost function of ``source`` holding ``line``, from its ``def`` to the end of the
    statement on that line (a call written over several lines is read whole)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    if best is None:
        return ""
    end = min((n.end_lineno or n.lineno for n in ast.walk(best)
               if isinstance(n, ast.stmt) and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno <= line <= (n.end_lineno or n.lineno)), default=line)
    return "\n".join(source.splitlines()[best.lineno - 1:max(end, line)])


def frames_of(where: list | None, sources: Mapping[str, str] | None = None) -> list[Frame]:
    """The student's frames (``where``: [file, line, function, source line] each; a probe's
    report may give [line, function, source line]) with their functions' bodies from
    ``sources`` (file name -> text) when known."""
    frames = []
    for entry in where or []:
        entry = list(entry)
        if len(entry) == 3:
            entry = [""] + entry
        if len(entry) < 4:
            continue
        filename, number, _, text = entry[:4]
        source = _source_for(str(filename), sources or {})
        body = function_body(source, int(number)) if source and isinstance(number, int) else ""
        frames.append(Frame(str(text), body or str(text)))
    return frames


def _source_for(filename: str, sources: Mapping[str, str]) -> str | None:
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    if base in sources:
        return sources[base]
    return next(iter(sources.values())) if len(sources) == 1 and not base else None


def cause_of_error(type_name: str, message: str, where: list | None = None,
                   sources: Mapping[str, str] | None = None) -> Diagnosis | None:
    """The likely mistake behind ``type_name: message`` raised by the student's code, if known.
    ``where``: the student's traceback frames; ``sources``: the student's files (name -> text),
    to read the functions on the traceback."""
    frames = frames_of(where, sources)
    if cause := _shape_cause(type_name, message or "", frames):
        return cause
    for types, pattern, cause in _RULES:
        if type_name in types and re.search(pattern, message or ""):
            return cause
    return None


# --------------------------------------------------------------------------- other devices

_VALUE_READ = r"\.item\(\)|\.numpy\(\)|\.tolist\(\)|\b(float|int|bool)\((?!\s*[\"'\d])|^\s*(if|elif|while)\b|\bnp\."
_FACTORY = r"torch\.(zeros|ones|empty|full|arange|eye|tensor|rand\w*|linspace|tril|triu)\("
# what PyTorch says when a tensor on the CPU meets one on another device (meta standing for a GPU)
_MIXED = r"expected device|same device|on device \w+ is not"
# what it says when a value is read out of a tensor on a device without values
_VALUE = r"_local_scalar_dense|data-dependent|to numpy|item\(\)"


def device_cause(message: str, frames: list[Frame]) -> Diagnosis | None:
    """Why a call on PyTorch's meta device (standing for a GPU) failed, from what PyTorch says
    and the student's code: a tensor made on the default device (two devices met; or a copy out
    of a meta tensor into a buffer made by a factory without ``device=``), a value read out of a
    tensor (said by PyTorch, or on the line that raised), a fill value given as a CPU tensor;
    both of the first two when neither the message nor the code tells which (never one picked)."""
    from autograder.diagnosis.causes import diagnosis_of

    if "`value` to be on same device" in message:
        return General.FILL_VALUE_TENSOR
    if re.search(_MIXED, message):
        return General.TENSOR_ON_DEFAULT_DEVICE
    if re.search(_VALUE, message):
        return General.VALUE_READ_OUT
    read = any(re.search(_VALUE_READ, _code(f.line)) for f in frames[-1:])
    made = any(re.search(_FACTORY, line) and "device" not in line
               for f in frames for line in map(_code, f.body.splitlines()))
    if read != made:
        return General.VALUE_READ_OUT if read else General.TENSOR_ON_DEFAULT_DEVICE
    return diagnosis_of([General.TENSOR_ON_DEFAULT_DEVICE, General.VALUE_READ_OUT])
