"""Valid arguments for ex3's contract names (tests/test_release.py: the stub raises
NotImplementedError for each): ``name -> (args, forward_args or None)``."""
import torch

CALLS = {
    "split_heads": ((torch.zeros(1, 3, 4), 2), None),
    "combine_heads": ((torch.zeros(1, 2, 3, 2),), None),
    "MultiHeadAttention": ((4, 2), (torch.zeros(1, 3, 4),) * 3),
}
