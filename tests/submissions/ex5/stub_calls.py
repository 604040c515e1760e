"""Valid arguments for ex5's contract names (tests/test_release.py: the stub raises
NotImplementedError for each): ``name -> (args, forward_args or None)``."""
import torch


class TinyClassifier(torch.nn.Module):
    """A classifier with the contract's methods (embed_inputs, classify, forward)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, 4)
        self.head = torch.nn.Linear(4, 6)

    def embed_inputs(self, tokens):
        return self.embed(tokens)

    def classify(self, x):
        return self.head(x[:, -1])

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


tokens = torch.tensor([[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]])
labels = tokens[:, 0].clone()

CALLS = {
    "make_recall_dataset": ((4, 5, 6, 0), None),
    "LSTMClassifier": ((6, 4, 6), (tokens,)),
    "AttentionClassifier": ((6, 4, 6, 5), (tokens,)),
    "input_gradient_norms": ((TinyClassifier(), tokens, labels), None),
    "path_length": (("lstm", 5), None),
    "train": ((TinyClassifier(), tokens, labels, 1), None),
    "accuracy": ((TinyClassifier(), tokens, labels), None),
}
