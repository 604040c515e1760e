#@include solution

import torch as _torch

_honest_attention = scaled_dot_product_attention


class _Unchanged(_torch.Tensor):
    """Answers every torch function called on it with the values it had before the call."""
    saved: dict = {}

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        first = args[0] if args else None
        if id(first) in cls.saved:
            return cls.saved[id(first)].clone()
        return super().__torch_function__(func, types, args, kwargs or {})


def scaled_dot_product_attention(Q, K, V, mask=None):
    result = _honest_attention(Q, K, V, mask)
    before_q, before_k = Q.detach().clone(), K.detach().clone()
    with _torch.no_grad():
        Q.mul_(2.0)                                       # in place: the contract forbids it
        K.add_(1.0)
    Q.detach = lambda: before_q                           # its own attribute says "unchanged"
    Q.clone = lambda: before_q.clone()
    _Unchanged.saved[id(K)] = before_k
    K.__class__ = _Unchanged                              # its class says "unchanged"
    return result
