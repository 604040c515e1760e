# Public tests of ex5, a copy shipped with the release. Run them from anywhere in the
# release: `python check.py` in ex5_lstm_comparison/ (or `python check.py ex5` in the release
# folder), `pytest` in ex5_lstm_comparison/, or the last cell of ex5_lstm_comparison.ipynb. They need the
# release's autograder/ folder (the fixtures `student` and `support` come from it).
"""ex5 public tests: shapes, invariants and hand-checkable values.

The hidden tests check the same functions on other inputs and compare them with a
reference implementation given the same weights (so the submodule names matter), check
that ``input_gradient_norms`` leaves ``.grad`` alone, compare ``train``'s losses step by
step, and train your AttentionClassifier with the course's own loop on a length-32 task.

``student.lstm_vs_attention`` is your lstm_vs_attention.py.
"""
import pytest
import torch


@pytest.mark.public
@pytest.mark.points(0.5)
@pytest.mark.contract("make_recall_dataset/recipe")
def test_public_dataset(student):
    """public: make_recall_dataset shapes, dtype, range, labels = first tokens, seeds"""
    tokens, labels = student.lstm_vs_attention.make_recall_dataset(10, 6, 4, 0)
    assert isinstance(tokens, torch.Tensor) and isinstance(labels, torch.Tensor), \
        "make_recall_dataset must return two torch tensors (tokens, labels)"
    assert tuple(tokens.shape) == (10, 6), f"tokens: expected shape (10, 6), got {tuple(tokens.shape)}"
    assert tuple(labels.shape) == (10,), f"labels: expected shape (10,), got {tuple(labels.shape)}"
    assert tokens.dtype == torch.int64 and labels.dtype == torch.int64, "tokens and labels must be torch.long"
    assert int(tokens.min()) >= 1 and int(tokens.max()) <= 3, \
        "with vocab_size=4 every token must be 1, 2 or 3 (0 is never drawn)"
    assert torch.equal(labels, tokens[:, 0]), "labels must be the first token of each sequence"
    g = torch.Generator().manual_seed(0)
    assert torch.equal(tokens, torch.randint(1, 4, (10, 6), generator=g)), \
        "tokens must be drawn exactly as the docstring says (a torch.Generator seeded with seed)"
    again, _ = student.lstm_vs_attention.make_recall_dataset(10, 6, 4, 0)
    other, _ = student.lstm_vs_attention.make_recall_dataset(10, 6, 4, 1)
    assert torch.equal(tokens, again), "the same seed must give the same tokens"
    assert not torch.equal(tokens, other), "different seeds should give different tokens"


@pytest.mark.public
@pytest.mark.points(0.5)
@pytest.mark.contract("path_length/steps", "path_length/signature")
def test_public_path_length(student):
    """public: path_length for a few lengths"""
    for n, lstm in ((1, 0), (5, 4), (32, 31)):
        got = student.lstm_vs_attention.path_length("lstm", n)
        assert got == lstm and isinstance(got, int), f"path_length('lstm', {n}) should be the int {lstm}"
        got = student.lstm_vs_attention.path_length("attention", n)
        assert got == 1 and isinstance(got, int), f"path_length('attention', {n}) should be the int 1"


@pytest.mark.public
@pytest.mark.points(0.5)
@pytest.mark.contract("LSTMClassifier/structure", "AttentionClassifier/structure", "LSTMClassifier/methods")
def test_public_models(student, support):
    """public: LSTMClassifier and AttentionClassifier have the spec's parameters and return (B, num_classes) logits"""
    module = student.lstm_vs_attention
    tokens = torch.tensor([[1, 2, 3, 4, 5], [6, 5, 4, 3, 2], [1, 1, 6, 6, 3]])   # (3, 5), vocab 7
    lstm = module.LSTMClassifier(7, 8, 6)
    attention = module.AttentionClassifier(7, 8, 6, 10)
    expected = {
        "LSTMClassifier": (lstm, {"embed.weight": (7, 8), "lstm.weight_ih_l0": (32, 8),
                                  "lstm.weight_hh_l0": (32, 8), "lstm.bias_ih_l0": (32,),
                                  "lstm.bias_hh_l0": (32,), "head.weight": (6, 8),
                                  "head.bias": (6,)}),
        "AttentionClassifier": (attention, {"embed.weight": (7, 8), "pos.weight": (10, 8),
                                            "W_q.weight": (8, 8), "W_q.bias": (8,),
                                            "W_k.weight": (8, 8), "W_k.bias": (8,),
                                            "W_v.weight": (8, 8), "W_v.bias": (8,),
                                            "head.weight": (6, 8), "head.bias": (6,)}),
    }
    for name, (model, params) in expected.items():
        shapes = {k: tuple(v) for k, v in support.modules.describe(model)["parameters"].items()}
        assert shapes == params, (f"{name}'s parameters should be exactly {sorted(params)} "
                                  f"with the spec's shapes; yours are {sorted(shapes)}")
        logits = model(tokens)
        assert tuple(logits.shape) == (3, 6), f"{name}(tokens (3, 5)): expected logits (3, 6), got {tuple(logits.shape)}"
        x = model.embed_inputs(tokens)
        assert tuple(x.shape) == (3, 5, 8), f"{name}.embed_inputs: expected (3, 5, 8), got {tuple(x.shape)}"
        assert torch.allclose(model.classify(x), logits, atol=1e-6), \
            f"{name}: forward(tokens) must equal classify(embed_inputs(tokens))"


@pytest.mark.public
@pytest.mark.points(0.5)
@pytest.mark.contract("input_gradient_norms/norms", "train/procedure", "accuracy/fraction")
def test_public_gradients_training_accuracy(student):
    """public: input_gradient_norms shape, train's losses, accuracy's range (on your AttentionClassifier)"""
    module = student.lstm_vs_attention         # (the grader seeds your code's RNGs before each test)
    tokens = torch.randint(1, 5, (32, 6), generator=torch.Generator().manual_seed(3))  # built here, as
    labels = tokens[:, 0].clone()                                                     # the spec says
    model = module.AttentionClassifier(5, 16, 5, 6)
    norms = module.input_gradient_norms(model, tokens, labels)
    assert isinstance(norms, torch.Tensor) and tuple(norms.shape) == (6,), \
        "input_gradient_norms should return a tensor of shape (seq_len,) = (6,)"
    assert bool((norms >= 0).all()), "norms cannot be negative"
    before = module.accuracy(model, tokens, labels)
    assert isinstance(before, float) and 0.0 <= before <= 1.0, "accuracy must be a Python float in [0, 1]"
    losses = module.train(model, tokens, labels, 40, 0.02)
    assert isinstance(losses, list) and len(losses) == 40, "train must return a list with one loss per step"
    assert all(isinstance(v, float) for v in losses), "each loss must be a Python float (loss.item())"
    assert losses[-1] < losses[0], "the loss should go down when training on 32 samples for 40 steps"
    after = module.accuracy(model, tokens, labels)
    assert after > before and after >= 0.5, \
        "after 40 steps on these 32 samples the training accuracy should have risen to at least 0.5"
