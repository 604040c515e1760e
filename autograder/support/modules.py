"""Worker-side helpers for student objects: nn.Module structure and gradients, fresh axes.

Runs inside the sandboxed worker (from the kit's pristine copy) next to the student's
objects. Every function returns plain data (dicts, lists, str, numbers, tensors) or
handles to objects that stay in the worker. Nothing here knows an expected value: the
grading process makes every judgement.
"""
from __future__ import annotations

from typing import Any

import torch

__all__ = ["describe", "load_weights", "parameter_values", "parameter_grads", "input_grads", "type_names", "same_object",
           "new_axes", "close_all", "find_axes", "find_figure"]


# --------------------------------------------------------------------------- objects

def type_names(obj: Any) -> list[str]:
    """Class names along ``type(obj)``'s MRO, most specific first (``["Axes", …, "object"]``)."""
    return [cls.__name__ for cls in type(obj).__mro__]


def same_object(a: Any, b: Any) -> bool:
    """Whether two worker objects are one and the same (``a is b``)."""
    return a is b


# --------------------------------------------------------------------------- nn.Module

def describe(module: torch.nn.Module) -> dict[str, Any]:
    """The module's structure as plain data.

    ``children``: {name: class name} of direct submodules; ``parameters``: {dotted name:
    shape list}; ``n_parameters``: total number of scalar parameters; ``buffers``:
    {dotted name: shape list}; ``type``: the module's class name.
    """
    if not isinstance(module, torch.nn.Module):
        return {"type": type(module).__name__, "children": {}, "parameters": {},
                "n_parameters": 0, "buffers": {}, "is_module": False}
    params = dict(module.named_parameters())
    return {
        "type": type(module).__name__,
        "is_module": True,
        "children": {name: type(child).__name__ for name, child in module.named_children()},
        "parameters": {name: list(p.shape) for name, p in params.items()},
        "n_parameters": int(sum(p.numel() for p in params.values())),
        "buffers": {name: list(b.shape) for name, b in module.named_buffers()},
    }


def parameter_values(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """{dotted name: a detached copy of the parameter}; ``{}`` for what is not a module."""
    if not isinstance(module, torch.nn.Module):
        return {}
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def load_weights(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """``module.load_state_dict(state)``, ``state`` holding every parameter by name, with the
    module's own persistent buffers added to it first.

    The contract names a module's submodules and parameters, not its buffers: a registered
    constant, position ids or a causal mask is the student's to keep, and strict loading
    would refuse the module for it ("Missing key(s)"). A parameter that ``state`` lacks (an
    extra one) or a key of ``state`` that the module lacks (a missing or misnamed one)
    fails as strict loading says. Not a module: its own ``load_state_dict``, as given.
    """
    if not isinstance(module, torch.nn.Module):
        module.load_state_dict(state)
        return
    parameters = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    buffers = {name: value for name, value in module.state_dict().items()
               if name not in state and name not in parameters}
    module.load_state_dict({**buffers, **state})


def _pick(out: Any, which_output: int | None) -> torch.Tensor:
    if which_output is not None and isinstance(out, (tuple, list)):
        out = out[which_output]
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"expected a tensor output, got {type(out).__name__}")
    return out


def parameter_grads(module: torch.nn.Module, args: list, kwargs: dict | None = None,
                    weight: torch.Tensor | None = None,
                    which_output: int | None = 0) -> dict[str, torch.Tensor | None]:
    """Gradients of ``sum(output * weight)`` w.r.t. every parameter of ``module``.

    ``output`` is ``module(*args, **kwargs)`` (element ``which_output`` of a tuple result).
    ``weight`` (same shape as the output; ones when None) fixes the direction of the
    backward pass. Returns {parameter name: gradient, or None when none reached it}.
    The parameters' ``.grad`` are restored afterwards.
    """
    params = dict(module.named_parameters())
    saved = {name: p.grad for name, p in params.items()}
    try:
        for p in params.values():
            p.grad = None
        out = _pick(module(*args, **(kwargs or {})), which_output)
        w = torch.ones_like(out) if weight is None else weight.to(out.dtype)
        if not out.requires_grad:
            return {name: None for name in params}
        (out * w).sum().backward()
        return {name: (None if p.grad is None else p.grad.detach().clone())
                for name, p in params.items()}
    finally:
        for name, p in params.items():
            p.grad = saved[name]


def input_grads(fn: Any, args: list, kwargs: dict | None = None, wrt: list[int] | None = None,
                weight: torch.Tensor | None = None,
                which_output: int | None = 0) -> list[torch.Tensor | None]:
    """Gradients of ``sum(fn(*args, **kwargs)[which_output] * weight)`` w.r.t. ``args[i]``, i in ``wrt``.

    The chosen arguments are floating tensors; they are made to require grad here (tensors
    arriving from the grader carry no graph). None for an input no gradient reached.
    """
    args = list(args)
    wrt = list(range(len(args))) if wrt is None else list(wrt)
    for i in wrt:
        args[i] = args[i].detach().clone().requires_grad_(True)
    out = _pick(fn(*args, **(kwargs or {})), which_output)
    if not out.requires_grad:
        return [None for _ in wrt]
    w = torch.ones_like(out) if weight is None else weight.to(out.dtype)
    grads = torch.autograd.grad((out * w).sum(), [args[i] for i in wrt], allow_unused=True)
    return [None if g is None else g.detach() for g in grads]


# --------------------------------------------------------------------------- figures

def new_axes(nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] = (4.0, 3.0)):
    """A fresh pyplot figure and its axes: ``(fig, ax)``, ``ax`` an array flattened to a list
    when ``nrows * ncols > 1``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=tuple(figsize), squeeze=True)
    if nrows * ncols > 1:
        axes = list(axes.ravel())
    return fig, axes


def close_all() -> int:
    """Close every pyplot figure (keeps the worker's memory bounded); how many were open."""
    import matplotlib.pyplot as plt

    count = len(plt.get_fignums())
    plt.close("all")
    return count


def _root_figure(artist):
    try:
        return artist.get_figure(root=True)        # matplotlib >= 3.10
    except TypeError:
        fig = artist.figure
        while fig is not None and getattr(fig, "figure", fig) is not fig:
            fig = fig.figure
        return fig


def _plot_axes(fig) -> list:
    return [a for a in fig.get_axes() if getattr(a, "_colorbar", None) is None]


def find_axes(obj: Any = None):
    """The axes a plotting call drew into, from what it returned.

    An Axes -> itself; a Figure -> its first non-colorbar axes; anything else (None, a
    tuple…) -> the first non-colorbar axes of pyplot's current figure, or None.
    """
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure
    import matplotlib.pyplot as plt

    if isinstance(obj, Axes):
        return obj
    if isinstance(obj, (Figure, SubFigure)):
        axes = _plot_axes(_root_figure(obj) if isinstance(obj, SubFigure) else obj)
        return axes[0] if axes else None
    if isinstance(obj, (tuple, list)):
        for item in obj:
            if isinstance(item, Axes):
                return item
    if plt.get_fignums():
        axes = _plot_axes(plt.gcf())
        return axes[0] if axes else None
    return None


def find_figure(obj: Any = None):
    """The figure a plotting call drew, from what it returned (a Figure, an Axes, a tuple
    holding one, or else pyplot's current figure); None when there is none."""
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure
    import matplotlib.pyplot as plt

    if isinstance(obj, Figure):
        return obj
    if isinstance(obj, Artist):
        return _root_figure(obj)
    if isinstance(obj, (tuple, list)):
        for item in obj:
            if isinstance(item, (Figure, Artist)):
                return find_figure(item)
    return plt.gcf() if plt.get_fignums() else None
