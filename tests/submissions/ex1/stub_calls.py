"""Valid arguments for ex1's contract names (tests/test_release.py: the stub raises
NotImplementedError for each): ``name -> (args, forward_args or None)``."""
import numpy as np
import torch

a = np.arange(6, dtype=float).reshape(2, 3) / 10
t = torch.arange(6, dtype=torch.float64).reshape(1, 2, 3) / 10

CALLS = {
    "softmax": ((a,), None),
    "scaled_dot_product_attention_np": ((a, a, a), None),
    "attention_backward_np": ((a, a, a, a), None),
    "numerical_gradient": ((lambda x: float(np.sum(x)), a), None),
    "scaled_dot_product_attention": ((t, t, t), None),
}
