#@include solution

# my own debugging output, left in the submission
import sys as _sys
import warnings as _warnings

print("Hello grader! starting up")
_warnings.warn("a DeprecationWarning-ish note", DeprecationWarning)
_warnings.warn("a UserWarning at import")
print("stderr noise", file=_sys.stderr)

_inner = scaled_dot_product_attention_np


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    print("debug: shapes", getattr(Q, "shape", None), getattr(K, "shape", None))
    _warnings.warn("RuntimeWarning: pretend overflow", RuntimeWarning)
    return _inner(Q, K, V, mask)
