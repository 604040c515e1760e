#@include solution

import sys as _sys
import warnings as _warnings

_sys.stdout.write("chatter " * 2_000_000)               # 16 MB at import
_originals = {name: globals()[name] for name in (
    "softmax", "scaled_dot_product_attention_np", "attention_backward_np",
    "numerical_gradient", "scaled_dot_product_attention")}


def _noisy(fn):
    def wrapper(*args, **kwargs):
        _sys.stdout.write("debug " * 200_000 + "\n")     # 1.2 MB per call
        _sys.stderr.write("warning " * 100_000 + "\n")
        _warnings.warn("this is fine " * 1000)
        return fn(*args, **kwargs)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


for _name, _fn in _originals.items():
    globals()[_name] = _noisy(_fn)
