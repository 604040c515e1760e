"""Hostile corpus, generated: submissions that return NaN (or inf) of the right shapes everywhere.

Such a file implements nothing, yet every value it returns has the contract's shape (and,
for torch, is even connected to autograd; modules have the spec's submodules and load
weights). Observed before these checks: a multihead.py like this scored 2.75/20 (a ``>``
comparison is False for NaN, a shape test took NaN, the rules test only built the module).
Every exercise must give it 0: value checks reject NaN/inf, shape and "runs" tests require
finite values, structure and rules tests require that loaded weights are used.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder import contract
from helpers import grade_folder, make_submission

PRELUDE = '''import math
import numpy as np
import torch
from torch import nn

FILL = float("{value}")


def _like(t, shape):
    """A tensor of FILL with ``shape``, connected to ``t`` by autograd (when t needs grad)."""
    return t.new_full(tuple(shape), FILL) + 0 * t.sum()
'''

SOURCES = {
    "ex1": '''
def softmax(x, axis=-1):
    return np.full(np.shape(x), FILL)


def _shapes(Q, K, V):
    lead = tuple(np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2]))
    return lead + (Q.shape[-2], V.shape[-1]), lead + (Q.shape[-2], K.shape[-2])


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    out, w = _shapes(Q, K, V)
    return np.full(out, FILL), np.full(w, FILL)


def attention_backward_np(d_output, Q, K, V, mask=None):
    return np.full(Q.shape, FILL), np.full(K.shape, FILL), np.full(V.shape, FILL)


def numerical_gradient(f, x, eps=1e-6):
    for i in range(x.size):                      # the calls a correct version makes
        for sign in (1, -1):
            y = x.copy()
            y.flat[i] += sign * eps
            f(y)
    return np.full(x.shape, FILL)


def scaled_dot_product_attention(Q, K, V, mask=None):
    out, w = _shapes(Q, K, V)
    both = Q.sum() + K.sum() + V.sum()
    return _like(both, out), _like(both, w)
''',
    "ex2": '''
import matplotlib.pyplot as plt


def plot_attention(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis"):
    fig, ax = plt.subplots()
    ax.imshow(np.full(tuple(weights.shape), FILL))
    return ax


def plot_attention_heads(weights, tokens, ncols=4, title=None):
    h = weights.shape[0]
    fig, axes = plt.subplots(math.ceil(h / ncols), min(h, ncols), squeeze=False)
    for ax in axes.flat:
        ax.imshow(np.full(tuple(weights.shape[1:]), FILL))
    return fig


def top_attended(weights, key_tokens, k=1):
    return [[str(FILL)] * k for _ in range(weights.shape[0])]
''',
    "ex3": '''
def split_heads(x, num_heads):
    B, n, d = x.shape
    return _like(x, (B, num_heads, n, d // num_heads))


def combine_heads(x):
    B, h, n, d = x.shape
    return _like(x, (B, n, h * d))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, n, d = query.shape
        anchor = sum(p.sum() for p in self.parameters()) + query.sum() + key.sum() + value.sum()
        return _like(anchor, (B, n, d)), _like(anchor, (B, self.num_heads, n, key.shape[1]))
''',
    "ex4": '''
def create_causal_mask(seq_len, device=None):
    return torch.full((seq_len, seq_len), FILL, device=device)


def create_padding_mask(lengths, max_len):
    return torch.full((len(lengths), max_len), FILL)


def combine_masks(causal, padding):
    return torch.full((padding.shape[0], causal.shape[0], causal.shape[1]), FILL)


def causal_self_attention(x, W_q, W_k, W_v):
    B, n, _ = x.shape
    anchor = x.sum() + W_q.sum() + W_k.sum() + W_v.sum()
    return _like(anchor, (B, n, W_v.shape[1])), _like(anchor, (B, n, n))


def attend_next(q_t, K_cache, V_cache):
    anchor = q_t.sum() + K_cache.sum() + V_cache.sum()
    return _like(anchor, (q_t.shape[0], V_cache.shape[-1])), _like(anchor, K_cache.shape[:2])


def greedy_generate(model, prompt, max_new_tokens):
    return torch.full((prompt.shape[0], prompt.shape[1] + max_new_tokens), FILL)
''',
    "ex5": '''
def make_recall_dataset(num_samples, seq_len, vocab_size, seed):
    return torch.full((num_samples, seq_len), FILL), torch.full((num_samples,), FILL)


class _Filled(nn.Module):
    def embed_inputs(self, tokens):
        return _like(self.embed.weight.sum(), (*tokens.shape, self.embed.weight.shape[1]))

    def classify(self, x):
        anchor = sum(p.sum() for p in self.parameters()) + x.sum()
        return _like(anchor, (x.shape[0], self.head.out_features))

    def forward(self, tokens):
        return self.classify(self.embed_inputs(tokens))


class LSTMClassifier(_Filled):
    def __init__(self, vocab_size, d_model, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, num_classes)


class AttentionClassifier(_Filled):
    def __init__(self, vocab_size, d_model, num_classes, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, num_classes)


def input_gradient_norms(model, tokens, labels):
    return torch.full((tokens.shape[1],), FILL)


def path_length(kind, seq_len):
    return FILL


def train(model, tokens, labels, steps, lr=1e-2):
    return [FILL] * steps


def accuracy(model, tokens, labels):
    return FILL
''',
    "ex6": '''
import matplotlib.pyplot as plt


def sinusoidal_encoding(max_len, d_model, dtype=torch.float32, device=None):
    return torch.full((max_len, d_model), FILL, dtype=dtype, device=device)


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.pos = nn.Embedding(max_len, d_model)

    def forward(self, x):
        if x.shape[-2] > self.pos.num_embeddings:
            raise ValueError("longer than max_len")
        return _like(x + self.pos.weight.sum(), x.shape)


def add_positional_encoding(x, pe):
    return _like(x + pe.sum(), x.shape)


def make_copy_task(num_samples, seq_len, vocab_size, position, seed):
    return torch.full((num_samples, seq_len), FILL), torch.full((num_samples,), FILL)


def extrapolation_experiment(train_len=8, vocab_size=8, d_model=16, position=1, steps=80, seed=0):
    return {"sinusoidal_train": FILL, "sinusoidal_long": FILL, "learned_train": FILL, "learned_long": FILL}


def plot_encoding(pe, ax=None, title=None):
    fig, ax = plt.subplots() if ax is None else (ax.figure, ax)
    ax.imshow(np.full(tuple(pe.shape), FILL), vmin=-1, vmax=1)
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    fig.colorbar(ax.images[0], ax=ax)
    return fig
''',
}


def nonfinite_source(exercise_id: str, value: str) -> str:
    """The exercise's file that returns ``value`` ("nan" or "inf") of the right shapes everywhere."""
    return PRELUDE.format(value=value) + SOURCES[exercise_id]


@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize("ex", contract.EXERCISES, ids=lambda ex: ex.id)
def test_nonfinite_submission_scores_zero(ex: contract.Exercise, value: str, tmp_path: Path):
    folder = make_submission(tmp_path, {ex.filename: nonfinite_source(ex.id, value)})
    results = grade_folder(folder, ex.id)
    passed = {t.name: t.output for t in results.tests if t.passed}
    assert results.tests and results.score == 0, f"{ex.id} filled with {value} passed {sorted(passed)}"
    for t in results.tests:
        assert "could not finish this test" not in t.output, (t.name, t.output)


def test_sources_cover_every_exercise():
    assert set(SOURCES) == {ex.id for ex in contract.EXERCISES}
