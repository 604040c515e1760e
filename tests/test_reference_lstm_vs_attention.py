"""The ex5 oracle: dataset formula, model structure, a hand-written LSTM, manual autograd
and training loops, and that attention actually learns the recall task quickly."""
from __future__ import annotations

import copy
import time

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from reference import lstm_vs_attention as ref


# --------------------------------------------------------------------------- dataset

def test_dataset_exact_formula_and_determinism():
    tokens, labels = ref.make_recall_dataset(50, 7, 6, seed=123)
    g = torch.Generator().manual_seed(123)
    expected = torch.randint(1, 6, (50, 7), generator=g)
    assert tokens.dtype == torch.int64 and tokens.shape == (50, 7) and labels.shape == (50,)
    assert torch.equal(tokens, expected)
    assert torch.equal(labels, expected[:, 0])
    again, _ = ref.make_recall_dataset(50, 7, 6, seed=123)
    other, _ = ref.make_recall_dataset(50, 7, 6, seed=124)
    assert torch.equal(tokens, again) and not torch.equal(tokens, other)
    assert int(tokens.min()) >= 1 and int(tokens.max()) <= 5


def test_dataset_labels_are_a_copy():
    tokens, labels = ref.make_recall_dataset(5, 4, 9, seed=0)
    before = tokens.clone()
    labels += 100
    assert torch.equal(tokens, before)


# --------------------------------------------------------------------------- structure

def test_lstm_classifier_submodules():
    model = ref.LSTMClassifier(10, 8, 5)
    children = dict(model.named_children())
    assert set(children) == {"embed", "lstm", "head"}
    assert isinstance(model.embed, nn.Embedding) and model.embed.weight.shape == (10, 8)
    assert isinstance(model.lstm, nn.LSTM) and model.lstm.batch_first
    assert model.lstm.input_size == model.lstm.hidden_size == 8 and model.lstm.num_layers == 1
    assert isinstance(model.head, nn.Linear) and (model.head.in_features, model.head.out_features) == (8, 5)


def test_attention_classifier_submodules():
    model = ref.AttentionClassifier(10, 8, 5, max_len=12)
    assert set(dict(model.named_children())) == {"embed", "pos", "W_q", "W_k", "W_v", "head"}
    assert model.pos.weight.shape == (12, 8) and model.embed.weight.shape == (10, 8)
    for name in ("W_q", "W_k", "W_v"):
        layer = getattr(model, name)
        assert isinstance(layer, nn.Linear) and layer.weight.shape == (8, 8) and layer.bias is not None
    assert (model.head.in_features, model.head.out_features) == (8, 5)


def _lstm_by_hand(model: ref.LSTMClassifier, tokens: torch.Tensor) -> torch.Tensor:
    """The LSTM recurrence written out (gate order i, f, g, o as documented by torch)."""
    lstm = model.lstm
    x = model.embed.weight[tokens]                             # (B, n, d)
    B, n, d = x.shape
    h = torch.zeros(B, d)
    c = torch.zeros(B, d)
    for t in range(n):
        gates = x[:, t] @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    return h @ model.head.weight.T + model.head.bias


def test_lstm_classifier_forward_by_hand():
    torch.manual_seed(0)
    model = ref.LSTMClassifier(7, 6, 4)
    tokens = torch.randint(0, 7, (3, 5))
    logits = model(tokens)
    assert logits.shape == (3, 4)
    torch.testing.assert_close(logits, _lstm_by_hand(model, tokens), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.embed_inputs(tokens), model.embed.weight[tokens])


def test_attention_classifier_forward_by_hand():
    torch.manual_seed(1)
    model = ref.AttentionClassifier(7, 6, 4, max_len=9)
    tokens = torch.randint(0, 7, (3, 5))
    E = model.embed_inputs(tokens)
    for b in range(3):
        for t in range(5):
            torch.testing.assert_close(E[b, t], model.embed.weight[tokens[b, t]] + model.pos.weight[t])
    lin = lambda layer, z: z @ layer.weight.T + layer.bias  # noqa: E731
    attended = F.scaled_dot_product_attention(lin(model.W_q, E), lin(model.W_k, E), lin(model.W_v, E))
    expected = lin(model.head, attended[:, -1])
    torch.testing.assert_close(model(tokens), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.classify(E), expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- gradients, path length

def _manual_gradient_norms(model, tokens, labels):
    model = copy.deepcopy(model)                               # backward() must not touch the original
    E = model.embed_inputs(tokens).detach().clone().requires_grad_(True)
    logits = model.classify(E)
    total = sum(logits[b, int(labels[b])] for b in range(len(labels)))
    total.backward()
    B, n, _ = E.shape
    return torch.stack([sum(E.grad[b, t].pow(2).sum().sqrt() for b in range(B)) / B for t in range(n)])


@pytest.mark.parametrize("kind", ["lstm", "attention"])
def test_input_gradient_norms_match_manual_autograd_and_leave_grad_alone(kind):
    torch.manual_seed(2)
    model = ref.LSTMClassifier(6, 5, 6) if kind == "lstm" else ref.AttentionClassifier(6, 5, 6, 8)
    tokens, labels = ref.make_recall_dataset(4, 8, 6, seed=3)
    params = list(model.parameters())
    params[0].grad = torch.full_like(params[0], 7.0)           # a sentinel; others stay None
    got = ref.input_gradient_norms(model, tokens, labels)
    assert got.shape == (8,) and got.dtype == torch.float32
    torch.testing.assert_close(got, _manual_gradient_norms(model, tokens, labels), rtol=1e-5, atol=1e-7)
    assert torch.all(params[0].grad == 7.0)
    assert all(p.grad is None for p in params[1:])


def test_path_length():
    assert ref.path_length("lstm", 50) == 49
    assert ref.path_length("attention", 50) == 1
    assert ref.path_length("lstm", 1) == 0
    with pytest.raises(ValueError):
        ref.path_length("transformer", 10)


# --------------------------------------------------------------------------- training, accuracy

def test_train_matches_a_manual_loop():
    torch.manual_seed(4)
    model = ref.AttentionClassifier(6, 8, 6, 5)
    twin = copy.deepcopy(model)
    tokens, labels = ref.make_recall_dataset(32, 5, 6, seed=5)
    with torch.no_grad():
        initial = F.cross_entropy(model(tokens), labels).item()
    losses = ref.train(model, tokens, labels, steps=6, lr=3e-2)

    opt = torch.optim.Adam(twin.parameters(), lr=3e-2)
    expected = []
    for _ in range(6):
        loss = F.cross_entropy(twin(tokens), labels)
        expected.append(loss.item())                          # before this step's update
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert isinstance(losses, list) and len(losses) == 6 and all(type(v) is float for v in losses)
    assert losses == pytest.approx(expected, rel=1e-6)
    assert losses[0] == pytest.approx(initial, rel=1e-6)     # the untouched model's loss
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


class FixedLogits(nn.Module):
    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, tokens):
        return self.logits


def test_accuracy_by_counting():
    logits = torch.tensor([[0.1, 0.9, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0], [1.0, 5.0, 2.0]],
                          requires_grad=True)
    labels = torch.tensor([1, 0, 1, 1])
    acc = ref.accuracy(FixedLogits(logits), torch.zeros(4, 2, dtype=torch.long), labels)
    assert type(acc) is float and acc == 0.75


def test_attention_learns_recall_quickly():
    torch.manual_seed(0)
    seq_len, vocab = 24, 8
    tokens, labels = ref.make_recall_dataset(256, seq_len, vocab, seed=0)
    test_tokens, test_labels = ref.make_recall_dataset(256, seq_len, vocab, seed=1)
    model = ref.AttentionClassifier(vocab, 32, vocab, seq_len)
    # CPU time on one thread: a budget that other processes on a shared machine cannot break.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start = time.process_time()
        losses = ref.train(model, tokens, labels, steps=120, lr=1e-2)
        cpu_seconds = time.process_time() - start
    finally:
        torch.set_num_threads(threads)
    assert cpu_seconds < 10.0
    assert losses[-1] < 0.25 * losses[0]
    assert ref.accuracy(model, test_tokens, test_labels) >= 0.9
