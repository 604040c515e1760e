"""Wire format between the grader and the worker: JSON headers plus raw buffers, no pickle.

A message is one frame (:mod:`autograder.sandbox.frames`, which reads it with every size
bounded first; its names are re-exported here)::

    u32 header_length | header (UTF-8 JSON) | u32 n_buffers | (u64 length | bytes) * n_buffers

Values inside the header are encoded as JSON with tagged objects for everything JSON lacks:

    {"L": [...]}                          list
    {"T": [...]}                          tuple
    {"D": [[key, value], ...]}            dict (keys: str or int)
    {"B": i}                              bytes (buffer i)
    {"C": [re, im]}                       complex
    {"A": i, "dtype": "<f4", "shape": s}  numpy array (buffer i, C order)
    {"X": i, "dtype": "float32", "shape": s, "grad": bool}   torch tensor
    {"H": id, "type": "Axes"}             handle to an object that stays in the worker
    {"R": id, "path": [...]}              reference to a worker object (grader -> worker)

Plain JSON str / int / float / bool / null stand for themselves. The decoder is strict:
anything else is a ``WireError``. Decoded arrays and tensors are fresh base-class objects,
so a subclass in the worker cannot lie about equality in the grader.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np
import torch

from autograder import textsafe
# The framing, here too for the callers of ``wire.send`` / ``wire.recv`` / ``wire.WireError``.
from autograder.sandbox.frames import (MAX_BUFFERS, MAX_DEPTH, MAX_FRAME_BYTES, MAX_HEADER_DEPTH,  # noqa: F401
                                       MAX_INT_DIGITS, MAX_REPLY_BYTES, MAX_REPLY_HEADER_BYTES, WireError,
                                       header_depth, pack, parse_header, recv, send)

_NUMPY_DTYPES = {np.dtype(t).str: np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}

_TORCH_DTYPES: dict[str, torch.dtype] = {str(t).removeprefix("torch."): t for t in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex64, torch.complex128)}


class Unencodable(TypeError):
    """A value of a type that may not cross the boundary."""

    def __init__(self, type_name: str):
        super().__init__(type_name)
        self.type_name = type_name


# --------------------------------------------------------------------------- encoding

class Encoder:
    """Turns a Python value into (JSON-able tree, buffers).

    ``to_handle(obj)`` is consulted for objects that are not data; it returns a handle
    tag dict, or raises ``Unencodable``. ``to_ref(obj)`` lets the grader encode its
    proxies as references.
    """

    def __init__(self, to_handle: Callable[[Any], dict] | None = None,
                 to_ref: Callable[[Any], dict | None] | None = None):
        self.buffers: list[bytes] = []
        self._to_handle = to_handle
        self._to_ref = to_ref

    def encode(self, obj: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise Unencodable("structure nested too deeply")
        if obj is None or type(obj) is str:
            return obj
        if isinstance(obj, (bool, np.bool_)):
            return bool(obj)
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
            return int(obj) if isinstance(obj, np.integer) else int.__int__(obj)
        if isinstance(obj, (float, np.floating)):
            return float(np.float64(obj)) if isinstance(obj, np.floating) else float.__float__(obj)
        if isinstance(obj, (complex, np.complexfloating)):
            c = complex(obj)
            return {"C": [c.real, c.imag]}
        if isinstance(obj, str):                      # str subclass: keep the characters only
            return str.__str__(obj)
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return {"B": self._add(bytes(obj))}
        if isinstance(obj, torch.Tensor):
            return self._tensor(obj)
        if isinstance(obj, np.ndarray):
            return self._array(obj)
        if self._to_ref is not None:
            ref = self._to_ref(obj)
            if ref is not None:
                return ref
        if isinstance(obj, (list, tuple)):          # subclasses (namedtuple, torch.Size) as items:
            # their real items, read past an overridden __iter__ (no student code runs here)
            tag, items = ("T", tuple.__iter__(obj)) if isinstance(obj, tuple) else ("L", list.__iter__(obj))
            return {tag: [self.encode(x, depth + 1) for x in items]}
        if isinstance(obj, dict):
            items = []
            for key, value in dict.items(obj):
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    raise Unencodable(f"dict with {type(key).__name__} keys")
                items.append([self.encode(key, depth + 1), self.encode(value, depth + 1)])
            return {"D": items}
        if self._to_handle is not None:
            return self._to_handle(obj)
        raise Unencodable(type(obj).__name__)

    def _add(self, data: bytes) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def _array(self, arr: np.ndarray) -> dict:
        base = np.ndarray.view(arr, np.ndarray) if type(arr) is not np.ndarray else arr   # no __array__
        dtype = base.dtype.newbyteorder("=") if base.dtype.byteorder not in "=|" else base.dtype
        if np.dtype(dtype).str not in _NUMPY_DTYPES:
            raise Unencodable(f"numpy array of dtype {base.dtype}")
        data = np.ascontiguousarray(base, dtype=dtype).reshape(base.shape)   # 0-d stays 0-d
        return {"A": self._add(data.tobytes()), "dtype": data.dtype.str, "shape": list(data.shape)}

    def _tensor(self, t: torch.Tensor) -> dict:
        # every method read from the class, never the instance: a tensor's own attribute
        # (``t.detach = partial(torch code)``) would run the student's code here, after the
        # call returned, outside the guards that watched it
        base = torch._C.TensorBase
        plain = torch.Tensor.as_subclass(t, torch.Tensor) if type(t) is not torch.Tensor else t
        plain = base.detach(plain)
        if plain.is_sparse or plain.layout != torch.strided:
            plain = base.to_dense(plain)
        if base.is_complex(plain) and base.is_conj(plain):
            plain = base.resolve_conj(plain)
        name = str(plain.dtype).removeprefix("torch.")
        if name not in _TORCH_DTYPES:
            raise Unencodable(f"tensor of dtype {plain.dtype}")
        plain = base.contiguous(base.cpu(plain))
        raw = base.view(plain, torch.int16) if plain.dtype == torch.bfloat16 else plain
        return {"X": self._add(base.numpy(raw).tobytes()), "dtype": name,
                "shape": list(plain.shape), "grad": bool(t.requires_grad)}


def tensor_values(value: torch.Tensor) -> torch.Tensor | None:
    """A plain CPU copy of ``value``'s values, read with torch's own C methods (taken when the
    kit was imported): an attribute the student's code set on the tensor (``x.detach = lambda:
    saved``) or a class it gave it (``x.__class__ = Liar``, whose ``__torch_function__`` answers
    with a saved copy) is never asked. None when the tensor is no longer a plain
    ``torch.Tensor`` (its class was changed: the caller reports it as changed). The worker's
    probes read a call's inputs after it with this (``support.autograd``, ``support.probes``)."""
    if type(value) is not torch.Tensor:
        return None
    with _NO_TORCH_FUNCTION():
        return _TENSOR_BASE.clone(_TENSOR_BASE.cpu(_TENSOR_BASE.detach(value)))


_TENSOR_BASE = torch._C.TensorBase
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction


# --------------------------------------------------------------------------- decoding

class Decoder:
    """Turns (tree, buffers) back into fresh Python values; strict about the format."""

    def __init__(self, buffers: list[bytes], from_handle: Callable[[dict], Any] | None = None,
                 from_ref: Callable[[dict], Any] | None = None):
        self.buffers = buffers
        self._used: set[int] = set()      # each buffer decodes once: output <= what was received
        self._from_handle = from_handle
        self._from_ref = from_ref

    def decode(self, node: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError("value nested too deeply")
        if node is None or isinstance(node, bool):
            return node
        if isinstance(node, str):                 # JSON may carry lone surrogates ("\\ud800")
            return _SURROGATE.sub(lambda m: textsafe.escape_char(m.group()), node) if _SURROGATE.search(node) else node
        if isinstance(node, int):
            return int(node)
        if isinstance(node, float):
            return float(node)
        if not isinstance(node, dict) or not node:
            raise WireError(f"unexpected JSON value of type {type(node).__name__}")
        if "L" in node:
            return [self.decode(x, depth + 1) for x in _as_list(node["L"])]
        if "T" in node:
            return tuple(self.decode(x, depth + 1) for x in _as_list(node["T"]))
        if "D" in node:
            out = {}
            for pair in _as_list(node["D"]):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise WireError("malformed dict item")
                key = self.decode(pair[0], depth + 1)
                if not isinstance(key, (str, int)):
                    raise WireError("malformed dict key")
                out[key] = self.decode(pair[1], depth + 1)
            return out
        if "B" in node:
            return bytes(self._buffer(node["B"]))
        if "C" in node:
            re_im = _as_list(node["C"])
            if len(re_im) != 2 or not all(isinstance(v, (int, float)) for v in re_im):
                raise WireError("malformed complex")
            return complex(re_im[0], re_im[1])
        if "A" in node:
            return self._array(node)
        if "X" in node:
            return self._tensor(node)
        if "H" in node and self._from_handle is not None:
            return self._from_handle(node)
        if "R" in node and self._from_ref is not None:
            return self._from_ref(node)
        raise WireError(f"unknown tag {sorted(node)[:3]}")

    def _buffer(self, index: Any) -> bytes:
        if type(index) is not int or not 0 <= index < len(self.buffers):
            raise WireError("bad buffer index")
        if index in self._used:
            raise WireError("a buffer referenced more than once")
        self._used.add(index)
        return self.buffers[index]

    def _sized(self, node: dict, key: str, kind: str, dtypes: dict) -> tuple[Any, tuple[int, ...], bytes]:
        """(dtype, shape, buffer) of an array (``kind`` "array", key "A") or tensor ("tensor",
        "X") node: an allowed dtype, a bounded shape, a buffer of exactly that many bytes."""
        dtype = dtypes.get(node.get("dtype"))
        if dtype is None:
            raise WireError(f"{kind} dtype {node.get('dtype')!r} not allowed")
        shape = _shape(node.get("shape"))
        data = self._buffer(node[key])
        itemsize = dtype.itemsize if kind == "array" else torch.empty((), dtype=dtype).element_size()
        if len(data) != itemsize * math.prod(shape):
            raise WireError(f"{kind} buffer size does not match its shape")
        return dtype, shape, data

    def _array(self, node: dict) -> np.ndarray:
        dtype, shape, data = self._sized(node, "A", "array", _NUMPY_DTYPES)
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    def _tensor(self, node: dict) -> torch.Tensor:
        dtype, shape, data = self._sized(node, "X", "tensor", _TORCH_DTYPES)
        if dtype == torch.bfloat16:
            arr = np.frombuffer(data, dtype=np.int16).copy()
            t = torch.from_numpy(arr).view(torch.bfloat16).reshape(shape)
        else:
            arr = np.frombuffer(data, dtype=torch.empty((), dtype=dtype).numpy().dtype).copy()
            t = torch.from_numpy(arr).reshape(shape)
        if node.get("grad") is True and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        return t


def _as_list(value: Any) -> list:
    if not isinstance(value, list):
        raise WireError("expected a JSON list")
    return value


def _shape(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(type(d) is int and 0 <= d < 2**40 for d in value):
        raise WireError("malformed shape")
    if len(value) > 32:
        raise WireError("too many dimensions")
    return tuple(value)


_SURROGATE = re.compile(r"[\ud800-\udfff]")
