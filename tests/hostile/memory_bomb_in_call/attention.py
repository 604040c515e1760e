#@include stub

import numpy as _np


def _raise_limits():
    import resource
    for name in ("RLIMIT_DATA", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE"):
        which = getattr(resource, name)
        try:
            resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        except (ValueError, OSError):
            try:
                resource.setrlimit(which, (resource.getrlimit(which)[1],) * 2)
            except (ValueError, OSError):
                pass


def softmax(x, axis=-1):
    _raise_limits()                            # first try to lift the cap...
    block = _np.ones((1 << 27,))               # ...then take 1 GiB (the cap is 300 MB)
    raise RuntimeError(f"escaped the memory limit: holding {block.nbytes >> 20} MB")


def numerical_gradient(f, x, eps=1e-6):
    return _np.ones((1 << 38,))                # one huge allocation: 2 TB


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    hoard = []
    while True:                                 # many small ones, each touched
        hoard.append(bytearray(8 << 20))


def scaled_dot_product_attention(Q, K, V, mask=None):
    import torch
    return torch.empty(1 << 37).fill_(1.0), None
