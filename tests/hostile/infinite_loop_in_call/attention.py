#@include stub

import os as _os
import signal as _signal
import time as _time


def _first_time(name):
    """True on the first call of ``name`` in this grading run (a flag file survives the
    worker restart after the hang), so the run costs a few timeouts, not one per test."""
    flag = f"/var/tmp/ag-proof-@TOKEN@/{name}"   # the harness's folder: /tmp is private
    if _os.path.exists(flag):
        return False
    open(flag, "w").close()
    return True


def softmax(x, axis=-1):
    if _first_time("softmax"):
        while True:
            pass
    raise NotImplementedError


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    if _first_time("sdpa_np"):
        while True:
            _time.sleep(0.01)
    raise NotImplementedError


def scaled_dot_product_attention(Q, K, V, mask=None):
    if _first_time("sdpa"):
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)      # ignore polite requests to stop
        _signal.signal(_signal.SIGALRM, _signal.SIG_IGN)
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})
        while True:
            pass
    raise NotImplementedError
