"""Valid arguments for ex2's contract names (tests/test_release.py: the stub raises
NotImplementedError for each): ``name -> (args, forward_args or None)``."""
import numpy as np

CALLS = {
    "plot_attention": ((np.eye(2), ["a", "b"], ["a", "b"]), None),
    "plot_attention_heads": ((np.full((2, 2, 2), 0.5), ["a", "b"]), None),
    "top_attended": ((np.eye(2), ["a", "b"]), None),
}
