"""Kit helpers that run inside the sandboxed worker, from the kit's pristine copy.

Only ``autograder.support.*`` may be imported from here: this package is loaded into the
worker process, which must not pull in the rest of the kit.
"""
from autograder.support import figures
from autograder.support import modules  # noqa: E402,F401  (ex2/ex3: nn.Module structure, grads, axes)

__all__ = ["figures"]
