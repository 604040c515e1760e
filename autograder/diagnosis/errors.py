"""Naming the mistake behind an exception the student's code raised.

PyTorch's and NumPy's error messages describe the symptom (a dtype clash, a view on a
non-contiguous tensor); the usual mistakes behind them are few and well known. Each rule
here is (exception type, a pattern of its message, the likely cause in the course's
terms). Only the exception's type name and message are read; nothing runs.
"""
from __future__ import annotations

import re

_RULES: list[tuple[tuple[str, ...], str, str]] = [
    (("RuntimeError",), r"Can't call numpy\(\) on Tensor that requires grad",
     "a tensor that requires grad is turned into a NumPy array: call .detach() first "
     "(weights.detach().cpu().numpy())"),
    (("RuntimeError",), r"view size is not compatible with input tensor's size and stride",
     ".view(...) on a tensor made non-contiguous by transpose: use .reshape(...) or "
     ".contiguous().view(...)"),
    (("RuntimeError",), r"expected (scalar type|m1 and m2 to have the same dtype|both vectors to have same dtype)"
                        r"|(Double|Float|Half) but found (Double|Float|Half)|mat1 and mat2 must have the same dtype",
     "a tensor of another dtype enters the computation (e.g. torch.tensor(…) or a mask created in "
     "float64 next to float32 inputs): create new tensors with dtype=x.dtype, or use Python floats"),
    (("TypeError",), r"~ \(operator\.invert\) is only implemented on integer and Boolean-type tensors"
                     r"|masked_fill_? only supports boolean masks|expected BoolTensor",
     "the mask is a float tensor: masks are torch.bool (torch.ones(n, n, dtype=torch.bool).tril(), "
     "or compare: positions <= i)"),
    (("RuntimeError",), r"masked_fill_? only supports boolean masks|expected BoolTensor|Expected.*Bool",
     "the mask is a float tensor: masks are torch.bool (torch.ones(n, n, dtype=torch.bool).tril(), "
     "or compare: positions <= i)"),
    (("RuntimeError",), r"a leaf Variable that requires grad is being used in an in-place operation",
     "an in-place operation on an input (Q /= …, x += …, masked_fill_): compute a new tensor instead"),
    (("RuntimeError",), r"one of the variables needed for gradient computation has been modified by an inplace",
     "an in-place operation on a tensor autograd still needs: use the out-of-place form "
     "(masked_fill, not masked_fill_; x = x + y, not x += y)"),
    (("TypeError",), r"got an unexpected keyword argument '(\w+)'",
     "the function's signature lacks the parameter '{0}' of the docstring: add it (with its default)"),
    (("TypeError",), r"takes (\d+) positional arguments? but (\d+) (were|was) given",
     "the function's signature has fewer parameters than the docstring: compare it with the stub"),
]


# A shape error raised on the line that computes a gradient says which transpose is missing.
_NO_TRANSPOSE = r"(\.T\b|\.mT\b|swapaxes|transpose|moveaxis|permute|einsum)"
_LINE_RULES: list[tuple[str, str]] = [
    (r"^\s*d_?V\w*\s*=\s*[^#]*@",
     "dV is computed without transposing the weights: dV = Pᵀ @ d_output "
     "(np.swapaxes(P, -1, -2) @ d_output), shape (..., m, d_v)"),
    (r"^\s*d_?K\w*\s*=\s*[^#]*@",
     "dK is computed without transposing dS: dK = dSᵀ @ Q / √d_k (np.swapaxes(dS, -1, -2) @ Q), "
     "shape (..., m, d_k)"),
]


def _shape_error_line_cause(type_name: str, message: str, where: list) -> str | None:
    if type_name != "ValueError" or not re.search(r"matmul|shapes .* not aligned|could not be broadcast", message):
        return None
    if not where or len(where[-1]) < 4:
        return None
    src = str(where[-1][3]).split("#")[0]
    if re.search(_NO_TRANSPOSE, src):
        return None
    for pattern, cause in _LINE_RULES:
        if re.search(pattern, src):
            return cause
    return None


def cause_of_error(type_name: str, message: str, where: list | None = None) -> str | None:
    """The likely mistake behind ``type_name: message`` (from the student's code), if known;
    ``where`` (the student's traceback frames: file, line, function, source) helps with shape
    errors."""
    if cause := _shape_error_line_cause(type_name, message, where or []):
        return cause
    for types, pattern, cause in _RULES:
        if type_name in types and (match := re.search(pattern, message or "")):
            return cause.format(*match.groups()) if match.groups() else cause
    return None
