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

The worker loads these modules (:func:`load_all`) before any student code runs: every one
but the drawing ones (:data:`DRAWING`) when its module is imported, the drawing ones with the
``figures`` warm-up, which the zygote does only before it forks the worker of an exercise that
draws. The grader imports only the few it shares with the suites (``functions``, ``lm``,
``training``: the same function or model built on both sides), never the drawing code.
"""
import importlib

__all__ = ["arguments", "autograd", "figures", "functions", "lm", "modules", "probes", "training"]
# What imports matplotlib's figure and axes (0.4-0.6 s of CPU, about 40 MB): loaded only where
# something is drawn, not in every zygote (ex1's grading never draws).
DRAWING = ("figures",)


def load_all(drawing: bool = True) -> None:
    """Import the support modules (the worker, before its pristine snapshot is taken);
    ``drawing=False``: all but :data:`DRAWING`."""
    for name in __all__:
        if drawing or name not in DRAWING:
            importlib.import_module(f"{__name__}.{name}")
