#@include stub

import os as _os
import sys as _sys

_sys.stdout.write("spam " * 2_000_000)                 # 10 MB at import
_os.write(2, b"\xff\xfe not utf-8 \x00" * 100_000)


def _shout():
    chunk = "=" * 1_000_000 + "\n"
    for _ in range(20):                                  # 20 MB per call
        _sys.stdout.write(chunk)
    _sys.stdout.flush()


def softmax(x, axis=-1):
    _shout()
    raise ValueError("huge message " + "x" * 20_000_000)


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    _shout()

    class Loud(Exception):
        def __str__(self):
            return "loud " * 5_000_000

    raise Loud()


def attention_backward_np(d_output, Q, K, V, mask=None):
    def deep(n):
        if n == 0:
            raise RuntimeError("deep " * 1000)
        return deep(n - 1)
    return deep(900)                                     # a very long traceback


def scaled_dot_product_attention(Q, K, V, mask=None):
    class Weird(Exception):
        def __str__(self):
            raise RuntimeError("no message for you")
    raise Weird()
