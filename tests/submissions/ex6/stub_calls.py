"""Valid arguments for ex6's contract names (tests/test_release.py: the stub raises
NotImplementedError for each): ``name -> (args, forward_args or None)``."""
import torch

CALLS = {
    "sinusoidal_encoding": ((4, 6), None),
    "LearnedPositionalEmbedding": ((5, 4), (torch.zeros(2, 3, 4),)),
    "add_positional_encoding": ((torch.zeros(2, 3, 4), torch.zeros(5, 4)), None),
    "make_copy_task": ((4, 5, 6, 1, 0), None),
    "extrapolation_experiment": ((), None),
    "plot_encoding": ((torch.zeros(3, 4),), None),
}
