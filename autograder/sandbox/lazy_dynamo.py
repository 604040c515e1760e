"""torch's ``_disable_dynamo`` wrappers, kept from importing ``torch._dynamo`` while nothing compiles.

Many of torch's Python functions are wrapped by ``torch._compile._disable_dynamo``: the
``torch._refs`` that compute every operation on the ``meta`` device (the suites' stand-in for
a GPU), the optimizers' methods, custom ops. On its first call such a wrapper imports
``torch._dynamo`` (about 0.6 s and 340 modules here), only to build a version of the function
that TorchDynamo will not trace, caches it on the function (``fn.__dynamo_disable``) and calls
it. While ``torch._dynamo`` has never been imported, nothing can be tracing (``torch.compile``
imports it first), and that version does exactly what the function does.

:func:`install` caches, on every such function not called yet, an :class:`UntilDynamo`: the
function itself while ``torch._dynamo`` is not loaded; once it is, torch's own disabled
version, built and cached as the wrapper would have. Functions wrapped later (a
``TorchDispatchMode`` subclass's ``__torch_dispatch__`` is wrapped when the class is made)
get theirs as they are wrapped: ``torch._disable_dynamo`` becomes :func:`_disable_dynamo`.
The zygote's first call on the meta device then costs 0.3 s instead of 1 s, and a grading
whose student code never trains or compiles loads no ``torch._dynamo`` at all.

The optimizers' ``step`` (Adam, SGD, …) is wrapped by another of torch's decorators,
``torch.optim.optimizer._use_grad_for_differentiable``, which sets the grad mode the step
runs in and imports ``torch._dynamo`` on every call to mark a graph break before and after
it (``torch._dynamo.graph_break``, which does nothing outside TorchDynamo's tracing). The
first step of any optimizer thus loaded ``torch._dynamo`` (1 s): in the grader, where ex5's
reference trains, and in every worker of a submission that trains. :func:`install` gives
each such ``step`` an :func:`_optimizer_step`: the same grad mode around the same step
while ``torch._dynamo`` is not loaded, torch's own wrapper (graph breaks and all) once it is.

It must run before the process first freezes its objects (``gc.freeze``: frozen objects are
not listed by ``gc.get_objects``): the grader calls it before it forks the zygote, which
inherits the result. Where torch's wrapper is laid out otherwise (another torch version),
nothing is changed and every call behaves as torch wrote it.
"""
from __future__ import annotations

import functools
import gc
import sys
import types
from typing import Any, Callable

_CACHE = "__dynamo_disable"      # the attribute torch's wrapper caches its disabled version in
_installed = False


class UntilDynamo:
    """A disabled function's stand-in, cached where torch caches that function's disabled
    version: the function itself until ``torch._dynamo`` is loaded, then torch's disabled
    version (built once, then cached in place of this stand-in)."""
    __slots__ = ("fn", "recursive")

    def __init__(self, fn: Callable[..., Any], recursive: bool):
        self.fn, self.recursive = fn, recursive

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dynamo = sys.modules.get("torch._dynamo")
        disable = getattr(dynamo, "disable", None)       # None while torch._dynamo is importing
        if disable is None:
            return self.fn(*args, **kwargs)
        disabled = disable(self.fn, self.recursive, wrapping=False)
        setattr(self.fn, _CACHE, disabled)
        return disabled(*args, **kwargs)


def _wrapper_code() -> types.CodeType | None:
    """The code of torch's wrapper, if it caches its disabled version as this module expects."""
    try:
        from torch._compile import _disable_dynamo
    except ImportError:
        return None
    code = _disable_dynamo(lambda: None).__code__
    if {"fn", "recursive"} <= set(code.co_freevars) and _CACHE in code.co_consts:
        return code
    return None


def _stand_in(fn: Callable[..., Any], recursive: bool) -> None:
    """Cache ``fn``'s :class:`UntilDynamo`, unless something is cached or it cannot be."""
    if "torch._dynamo" in sys.modules or getattr(fn, _CACHE, None) is not None:
        return
    try:
        setattr(fn, _CACHE, UntilDynamo(fn, recursive))
    except (AttributeError, TypeError):       # no attributes: torch's wrapper fails the same way
        pass


def _lazy_decorator(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch._disable_dynamo`` (``original``), each function it wraps given its stand-in."""
    def _disable_dynamo(fn: Callable[..., Any] | None = None, recursive: bool = True) -> Any:
        if fn is None:                         # @torch._disable_dynamo(recursive=...)
            return functools.partial(_disable_dynamo, recursive=recursive)
        wrapped = original(fn, recursive)
        _stand_in(fn, recursive)
        return wrapped
    return _disable_dynamo


def _use_grad_code() -> types.CodeType | None:
    """The code of torch's optimizer-step wrapper, if it is laid out as :func:`_optimizer_step`
    expects (the step in a cell named ``func``; the only use of torch._dynamo a graph break)."""
    try:
        from torch.optim.optimizer import _use_grad_for_differentiable
    except ImportError:
        return None
    code = _use_grad_for_differentiable(lambda self: None).__code__
    if code.co_freevars == ("func",) and "graph_break" in code.co_names and "defaults" in code.co_names:
        return code
    return None


def _optimizer_step(use_grad: Callable[..., Any], step: Callable[..., Any]) -> Callable[..., Any]:
    """``use_grad`` (torch's wrapper of an optimizer's ``step``) without importing torch._dynamo
    while nothing can be tracing: the step runs with grad mode set as torch's wrapper sets it."""
    import torch

    @functools.wraps(step)
    def _use_grad(*args: Any, **kwargs: Any) -> Any:
        if getattr(sys.modules.get("torch._dynamo"), "graph_break", None) is not None:
            return use_grad(*args, **kwargs)            # torch's own, graph breaks and all
        optimizer = args[0]
        previous = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(optimizer.defaults["differentiable"])
            return step(*args, **kwargs)
        finally:
            torch.set_grad_enabled(previous)
    return _use_grad


def _lazy_optimizer_steps() -> int:
    """Every loaded optimizer class whose own ``step`` is torch's wrapper gets
    :func:`_optimizer_step` in its place; how many. A class whose ``step`` something else
    wrapped already (an optimizer was made: torch's profiling hook) is left as it is."""
    code = _use_grad_code()
    if code is None:
        return 0
    import torch

    count = 0
    classes = list(torch.optim.Optimizer.__subclasses__())
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        step = cls.__dict__.get("step")
        if type(step) is types.FunctionType and step.__code__ is code:
            cls.step = _optimizer_step(step, step.__closure__[0].cell_contents)
            count += 1
    return count


def install() -> int:
    """Give every wrapped function not called yet its :class:`UntilDynamo` and every optimizer
    step its :func:`_optimizer_step`; how many (0 when torch is not loaded, ``torch._dynamo``
    already is, torch's wrappers differ, or it was done)."""
    global _installed
    if _installed or "torch" not in sys.modules or "torch._dynamo" in sys.modules:
        return 0
    code = _wrapper_code()
    if code is None:
        return 0
    import torch

    fn_at, recursive_at = code.co_freevars.index("fn"), code.co_freevars.index("recursive")
    count = 0
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType and obj.__code__ is code:
            fn = obj.__closure__[fn_at].cell_contents
            if getattr(fn, _CACHE, None) is None:
                _stand_in(fn, obj.__closure__[recursive_at].cell_contents)
                count += 1
    torch._disable_dynamo = _lazy_decorator(torch._disable_dynamo)
    count += _lazy_optimizer_steps()
    _installed = True
    return count
