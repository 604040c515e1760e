"""Valid arguments for ex4's contract names (tests/test_release.py: the stub raises
NotImplementedError for each): ``name -> (args, forward_args or None)``."""
import torch


class TinyLM(torch.nn.Module):
    """A causal language model of the contract's shape: ids (B, t) -> logits (B, t, 5)."""

    def forward(self, ids):
        return torch.zeros(*ids.shape, 5)


CALLS = {
    "create_causal_mask": ((3,), None),
    "create_padding_mask": ((torch.tensor([2, 3]), 3), None),
    "combine_masks": ((torch.ones(3, 3, dtype=torch.bool), torch.ones(2, 3, dtype=torch.bool)), None),
    "causal_self_attention": ((torch.zeros(1, 3, 4), torch.zeros(4, 2), torch.zeros(4, 2),
                               torch.zeros(4, 2)), None),
    "attend_next": ((torch.zeros(1, 2), torch.zeros(1, 3, 2), torch.zeros(1, 3, 2)), None),
    "greedy_generate": ((TinyLM(), torch.ones(1, 2, dtype=torch.long), 2), None),
}
