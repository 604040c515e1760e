"""Frames between the grader and the worker: one message is ::

    u32 header_length | header (UTF-8 JSON) | u32 n_buffers | (u64 length | bytes) * n_buffers

read with every size and the header's nesting and numbers bounded before anything is
parsed (:func:`recv`). What a header says is checked by
:meth:`autograder.sandbox.protocol.Reply.from_frame` (a worker's reply) and its values (arrays,
tensors, handles) are :mod:`autograder.sandbox.wire`'s.

No torch here: the isolation levels send their first frame (the worker's pid) with this
module, and a process that only chooses and describes levels (``batch``, which forks or
starts the graders) never loads torch for it.
"""
from __future__ import annotations

import json
import re
import socket
import struct

import numpy as np

from autograder.jsontypes import JSONObject

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


class WireError(Exception):
    """A frame or value that does not follow the wire format."""


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
