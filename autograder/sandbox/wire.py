"""Wire format between the grader and the worker: JSON headers plus raw buffers, no pickle.

A message is one frame::

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

import json
import math
import re
import socket
import struct
from typing import Any, Callable

import numpy as np
import torch

from autograder.jsontypes import JSONObject
from autograder import textsafe

MAX_FRAME_BYTES = 512 * 1024 * 1024
# What the grader accepts from the worker. A reply is held several times over while it is
# read and decoded (chunks, joined frame, decoded copies), and JSON headers grow ~40x as
# Python objects ({"L": []} is 8 bytes of text), so both limits stay far below the 768 MB
# a Gradescope container has for grader and worker together.
MAX_REPLY_BYTES = 64 * 1024 * 1024
MAX_REPLY_HEADER_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
# A value nested MAX_DEPTH deep is about two JSON levels per level ({"L": [...]}).
MAX_HEADER_DEPTH = 2 * MAX_DEPTH + 8
MAX_INT_DIGITS = 400                 # Python ints cross the boundary exactly, within reason
MAX_BUFFERS = 100_000

_NUMPY_DTYPES = {np.dtype(t).str: np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}

_TORCH_DTYPES: dict[str, torch.dtype] = {str(t).removeprefix("torch."): t for t in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex64, torch.complex128)}


class WireError(Exception):
    """A frame or value that does not follow the wire format."""


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
        if isinstance(obj, (list, tuple)):          # subclasses (namedtuple, torch.Size) as items
            tag = "T" if isinstance(obj, tuple) else "L"
            return {tag: [self.encode(x, depth + 1) for x in obj]}
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
        base = np.asarray(arr).view(np.ndarray) if type(arr) is not np.ndarray else arr
        dtype = base.dtype.newbyteorder("=") if base.dtype.byteorder not in "=|" else base.dtype
        if np.dtype(dtype).str not in _NUMPY_DTYPES:
            raise Unencodable(f"numpy array of dtype {base.dtype}")
        data = np.ascontiguousarray(base, dtype=dtype).reshape(base.shape)   # 0-d stays 0-d
        return {"A": self._add(data.tobytes()), "dtype": data.dtype.str, "shape": list(data.shape)}

    def _tensor(self, t: torch.Tensor) -> dict:
        plain = torch.Tensor.as_subclass(t, torch.Tensor) if type(t) is not torch.Tensor else t
        plain = plain.detach()
        if plain.is_sparse or plain.layout != torch.strided:
            plain = plain.to_dense()
        if plain.is_complex() and plain.is_conj():
            plain = plain.resolve_conj()
        name = str(plain.dtype).removeprefix("torch.")
        if name not in _TORCH_DTYPES:
            raise Unencodable(f"tensor of dtype {plain.dtype}")
        plain = plain.cpu().contiguous()
        raw = plain.view(torch.int16) if plain.dtype == torch.bfloat16 else plain
        return {"X": self._add(raw.numpy().tobytes()), "dtype": name,
                "shape": list(plain.shape), "grad": bool(t.requires_grad)}


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


# --------------------------------------------------------------------------- framing

def pack(header: JSONObject, buffers: list[bytes] = ()) -> bytes:
    head = json.dumps(header, allow_nan=True, separators=(",", ":")).encode()
    parts = [struct.pack("<I", len(head)), head, struct.pack("<I", len(buffers))]
    for buf in buffers:
        parts += [struct.pack("<Q", len(buf)), buf]
    return b"".join(parts)


def send(sock: socket.socket, header: JSONObject, buffers: list[bytes] = ()) -> None:
    sock.sendall(pack(header, buffers))


def recv(sock: socket.socket, limit: int = MAX_FRAME_BYTES,
         header_limit: int | None = None) -> tuple[dict, list[bytes]]:
    """Read one frame. Raises ``EOFError`` when the peer closed, ``WireError`` on garbage.

    Sizes are checked before anything is read, so an oversized frame costs no memory; the
    header's nesting and numbers are checked before (and while) it is parsed, so any
    malformed header is a ``WireError``, never another exception."""
    head_limit = min(limit, header_limit or limit)
    (head_len,) = struct.unpack("<I", _read_exact(sock, 4))
    if head_len > head_limit:
        raise WireError(f"a reply of more than {_megabytes(head_limit)} "
                        "of structure (lists, dicts, strings); return arrays or tensors")
    header = parse_header(_read_exact(sock, head_len))
    (count,) = struct.unpack("<I", _read_exact(sock, 4))
    if count > MAX_BUFFERS:
        raise WireError("too many buffers")
    buffers, total = [], head_len
    for _ in range(count):
        (size,) = struct.unpack("<Q", _read_exact(sock, 8))
        total += size
        if total > limit:
            raise WireError(f"a reply larger than {_megabytes(limit)}")
        buffers.append(_read_exact(sock, size))
    return header, buffers


def check_reply(header: JSONObject) -> JSONObject:
    """A worker's reply as the grader may use it: ``{"ok": value}`` (the value is checked
    when decoded) or ``{"error": record}`` with typed, clipped fields; else ``WireError``.
    Either may carry ``"reach"``: reach-ins the worker noticed (:mod:`reachin`), checked as
    a short list of ``[event, file, line]``."""
    if "reach" in header:
        header = dict(header)
        reach = _reach_records(header.pop("reach"))
        return {**check_reply(header), "reach": reach}
    if set(header) == {"ok"}:
        return header
    record = header.get("error")
    if set(header) != {"error"} or not isinstance(record, dict) or not set(record) <= _ERROR_FIELDS:
        raise WireError("malformed reply")
    clean: dict = {}
    for key, value in record.items():
        if key in ("kind", "type", "message", "text"):
            if not isinstance(value, str):
                raise WireError(f"malformed error record ({key})")
            # made safe here, where it enters: escapes for controls and lone surrogates, bytes capped
            clean[key] = (textsafe.one_line(value, 100) if key in ("kind", "type")
                          else textsafe.text(value, _MAX_ERROR_BYTES))
        elif key in ("line", "offset"):
            if value is not None and type(value) is not int:
                raise WireError(f"malformed error record ({key})")
            clean[key] = value
        else:
            clean[key] = _frames(value)
    return {"error": clean}


_ERROR_FIELDS = {"kind", "type", "message", "where", "line", "offset", "text"}
_MAX_ERROR_BYTES = 4000
_MAX_REACH_RECORDS = 20


def _reach_records(value: object) -> list[list]:
    if not isinstance(value, list) or len(value) > _MAX_REACH_RECORDS:
        raise WireError("malformed reach-in records")
    clean = []
    for record in value:
        if (not isinstance(record, list) or len(record) != 3 or not isinstance(record[0], str)
                or not isinstance(record[1], str) or type(record[2]) is not int):
            raise WireError("malformed reach-in record")
        clean.append([textsafe.one_line(record[0], 40), textsafe.one_line(record[1], 200), record[2]])
    return clean


_MAX_FRAMES = 16


def _frames(value: Any) -> list[list]:
    """Traceback frames ``[filename, line, function, source]`` of an error record."""
    if not isinstance(value, list):
        raise WireError("malformed error record (where)")
    frames = []
    for frame in value[-_MAX_FRAMES:]:
        if not (isinstance(frame, list) and len(frame) == 4 and isinstance(frame[0], str)
                and (frame[1] is None or type(frame[1]) is int)
                and isinstance(frame[2], str) and isinstance(frame[3], str)):
            raise WireError("malformed error record (where)")
        frames.append([textsafe.one_line(frame[0], 300), frame[1], textsafe.one_line(frame[2], 100),
                       textsafe.one_line(frame[3], 300)])
    return frames


def parse_header(raw: bytes) -> JSONObject:
    """A frame's JSON header; ``WireError`` for anything that is not a bounded JSON object."""
    if header_depth(raw) > MAX_HEADER_DEPTH:
        raise WireError(f"header nested more than {MAX_HEADER_DEPTH} deep")
    try:
        header = json.loads(raw.decode("utf-8"), parse_int=_bounded_int)
    except (ValueError, RecursionError, TypeError, OverflowError) as exc:   # JSONDecodeError too
        raise WireError(f"header is not JSON: {_clip(exc)}") from None
    if not isinstance(header, dict):
        raise WireError("header is not an object")
    return header


def header_depth(raw: bytes) -> int:
    """The deepest ``[``/``{`` nesting outside JSON strings (an upper bound for any prefix
    of ``raw`` that parses), computed without recursion."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_HEADER_DEPTH:
        return 0                                    # cannot be deeper: skip the scan
    outside = _JSON_STRING.sub(b"", raw)
    steps = _STEP[np.frombuffer(outside, dtype=np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


_SURROGATE = re.compile(r"[\ud800-\udfff]")
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STEP = np.zeros(256, dtype=np.int8)              # +1 for [ and {, -1 for ] and }
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise WireError(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(text)


def _clip(exc: BaseException, limit: int = 200) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB"


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("peer closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
