"""Kit helpers that run inside the sandboxed worker, from the kit's pristine copy.

Only ``autograder.support.*`` may be imported from here: this package is loaded into the
worker process, which must not pull in the rest of the kit.

    arguments  ex6: torch.dtype / torch.device arguments, built in the worker
    autograd   ex1/ex4: gradients of student functions
    figures    ex2: the figure inspector (a drawn figure as data)
    functions  ex1: the functions handed to ``numerical_gradient``
    lm         ex4: the tiny causal language model for ``greedy_generate``
    modules    ex2/ex3: nn.Module structure and gradients, fresh axes
    probes     every exercise: inputs left alone for each input kind, the meta device
    training   ex5: structure, gradients, the kit's own training loop

The worker loads every module (:func:`load_all`) before any student code runs; the grader
imports only the few it shares with the suites (``functions``, ``lm``, ``training``: the same
function or model built on both sides), never the drawing code.
"""
import importlib

__all__ = ["arguments", "autograd", "figures", "functions", "lm", "modules", "probes", "training"]


def load_all() -> None:
    """Import every support module (the worker, before its pristine snapshot is taken)."""
    for name in __all__:
        importlib.import_module(f"{__name__}.{name}")
