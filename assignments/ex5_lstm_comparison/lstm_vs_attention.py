# ex5 · Attention versus an LSTM on long sequences — student file `lstm_vs_attention.py`.
# Replace every `raise NotImplementedError(...)` with your code; keep the names
# and signatures. Rules and how to check your work: README.md in this folder.
"""Exercise 5 — Attention versus an LSTM on long sequences.

The task: a sequence of random tokens whose label is its **first** token. To answer,
a model must carry the first token across the whole sequence. An LSTM passes it
along ``n − 1`` recurrent steps; a single attention layer can look at position 0
directly from the last position. You will build both models, train them, and measure
how strongly the prediction depends on each input position (input-gradient norms).

Conventions used throughout (they are also what the grader checks):

* Both classifiers split ``forward`` into two halves so that gradients with respect
  to the embedded inputs can be measured:
  ``forward(tokens) = classify(embed_inputs(tokens))``.
* The submodule names below are fixed (the grader loads weights with
  ``load_state_dict``), and the models have no other parameters and no dropout.
  Buffers of your own (``register_buffer``, e.g. position ids) are not parameters: the
  grader keeps them when it loads weights.
* Keep the input's dtype and device. The device rule is checked by running the
  classifiers' ``embed_inputs``, ``classify`` and ``forward`` with the model (moved with
  ``.to("meta")``) and its input on PyTorch's ``meta`` device (shapes and dtypes, no
  values; the grader's stand-in for a GPU): use torch operations only on the computation path (no
  ``.item()``, ``.tolist()``, ``bool(tensor)``), create any new tensor on the input's
  device (``device=x.device``) and give fill values as Python floats
  (``masked_fill(~mask, float("-inf"))``).
* Not allowed: ``torch.nn.MultiheadAttention`` and
  ``torch.nn.functional.scaled_dot_product_attention`` in ``AttentionClassifier`` and the
  functions it calls (write the attention yourself); ``nn.LSTM`` is required in
  ``LSTMClassifier``.
* This file must be self-contained: import only the standard library, ``numpy``,
  ``torch`` and ``matplotlib``.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_recall_dataset(
    num_samples: int,
    seq_len: int,
    vocab_size: int,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token sequences labelled by their first token.

    Exactly (the grader compares the tensors):
    ``g = torch.Generator().manual_seed(seed)``;
    ``tokens = torch.randint(1, vocab_size, (num_samples, seq_len), generator=g)``;
    ``labels = tokens[:, 0]`` as a copy (not a view of ``tokens``).

    Returns:
        ``(tokens, labels)``: ``tokens (num_samples, seq_len)`` and
        ``labels (num_samples,)``, both ``torch.long`` with values in
        ``1 … vocab_size − 1`` (0 is never drawn).
    """
    raise NotImplementedError("make_recall_dataset: not implemented yet")


class LSTMClassifier(nn.Module):
    """Embedding → one-layer LSTM → linear head on the final hidden state.

    Submodules, exactly these and no other parameters:
        embed: ``nn.Embedding(vocab_size, d_model)``
        lstm:  ``nn.LSTM(d_model, d_model, batch_first=True)``
        head:  ``nn.Linear(d_model, num_classes)``
    """

    def __init__(self, vocab_size: int, d_model: int, num_classes: int) -> None:
        """Create ``embed``, ``lstm`` and ``head`` (see the class docstring)."""
        super().__init__()
        raise NotImplementedError("LSTMClassifier.__init__: not implemented yet")

    def embed_inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens (B, n)`` long → ``embed(tokens)``, shape ``(B, n, d_model)``."""
        raise NotImplementedError("LSTMClassifier.embed_inputs: not implemented yet")

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        """Run the LSTM over embedded inputs and classify from its final hidden state.

        Args:
            x: ``(B, n, d_model)`` embedded inputs (any tensor; it may require grad).

        Returns:
            Logits ``(B, num_classes) = head(h_n)``, where ``h_n (B, d_model)`` is the
            LSTM's hidden state after the last position ``n − 1`` (zero initial
            state). Differentiable with respect to ``x``.
        """
        raise NotImplementedError("LSTMClassifier.classify: not implemented yet")

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens (B, n)`` → logits ``(B, num_classes) = classify(embed_inputs(tokens))``."""
        raise NotImplementedError("LSTMClassifier.forward: not implemented yet")


class AttentionClassifier(nn.Module):
    """Token + position embeddings → one unmasked self-attention head → linear head.

    Submodules, exactly these and no other parameters:
        embed: ``nn.Embedding(vocab_size, d_model)``
        pos:   ``nn.Embedding(max_len, d_model)`` (learned positions ``0 … max_len−1``)
        W_q, W_k, W_v: each ``nn.Linear(d_model, d_model)`` (with bias)
        head:  ``nn.Linear(d_model, num_classes)``
    No output projection, no residual connection, no layer norm, no dropout.
    """

    def __init__(self, vocab_size: int, d_model: int, num_classes: int, max_len: int) -> None:
        """Create the submodules listed in the class docstring."""
        super().__init__()
        raise NotImplementedError("AttentionClassifier.__init__: not implemented yet")

    def embed_inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens (B, n)`` long, ``n <= max_len`` → ``embed(tokens) + pos(arange(n))``.

        Returns:
            ``(B, n, d_model)``; position ``t`` of every sequence gets ``pos`` row ``t``.
        """
        raise NotImplementedError("AttentionClassifier.embed_inputs: not implemented yet")

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        """Single-head self-attention over ``x``, then classify from the last position.

        Args:
            x: ``(B, n, d_model)`` embedded inputs (it may require grad).

        Returns:
            Logits ``(B, num_classes) = head(a[:, -1])`` where
            ``a = softmax(q kᵀ / √d_model) v`` with ``q = W_q(x)``, ``k = W_k(x)``,
            ``v = W_v(x)``, no mask (every position attends to every position).
            Differentiable with respect to ``x``.
        """
        raise NotImplementedError("AttentionClassifier.classify: not implemented yet")

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens (B, n)`` → logits ``(B, num_classes) = classify(embed_inputs(tokens))``."""
        raise NotImplementedError("AttentionClassifier.forward: not implemented yet")


def input_gradient_norms(
    model: nn.Module,
    tokens: torch.Tensor,
    labels: torch.Tensor,
) -> torch.Tensor:
    """How strongly the correct-class logit depends on each input position.

    With ``E = model.embed_inputs(tokens)`` detached and made to require grad, take the
    gradient ``G`` of ``sum_b model.classify(E)[b, labels[b]]`` with respect to ``E``
    (shape ``(B, n, d_model)``). Position ``t`` gets the mean over the batch of the L2
    norm of ``G[b, t]`` (the norm over the ``d_model`` features).

    Args:
        model: an ``LSTMClassifier`` or ``AttentionClassifier`` (anything with
            ``embed_inputs`` and ``classify``).
        tokens: ``(B, n)`` long.
        labels: ``(B,)`` long.

    Returns:
        A 1-D tensor of shape ``(n,)`` with the model's dtype, not requiring grad.

    The parameters' ``.grad`` must be left exactly as they were (hint:
    ``torch.autograd.grad`` instead of ``.backward()``), and the model is not changed.
    """
    raise NotImplementedError("input_gradient_norms: not implemented yet")


def path_length(kind: str, seq_len: int) -> int:
    """Sequential steps information takes from position 0 to the last position.

    Args:
        kind: ``"lstm"`` or ``"attention"`` (exact lower-case strings).
        seq_len: sequence length ``n >= 1``.

    Returns:
        A Python ``int``: ``seq_len − 1`` for ``"lstm"`` (one recurrent step per
        position), ``1`` for ``"attention"`` (the last position attends to position 0
        directly).

    Raises:
        ValueError: for any other ``kind`` (the contract does not ask for it and it is
        not graded; a clear error is kinder than a ``KeyError`` from a table).
    """
    raise NotImplementedError("path_length: not implemented yet")


def train(
    model: nn.Module,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    steps: int,
    lr: float = 1e-2,
) -> list[float]:
    """Full-batch training with Adam and cross-entropy.

    Create ``torch.optim.Adam(model.parameters(), lr=lr)`` (default betas, eps and no
    weight decay). At each of the ``steps`` steps: zero the gradients, compute
    ``F.cross_entropy(model(tokens), labels)`` (mean over all samples), backpropagate,
    take one optimiser step. The model is trained in place.

    Args:
        model: a classifier mapping ``tokens (B, n)`` to logits ``(B, num_classes)``.
        tokens: ``(B, n)`` long.
        labels: ``(B,)`` long.
        steps: number of optimisation steps (``0`` leaves the model unchanged).
        lr: Adam learning rate.

    Returns:
        A list of ``steps`` Python floats: the loss of each step, computed before
        that step's update.
    """
    raise NotImplementedError("train: not implemented yet")


def accuracy(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of samples whose largest logit is at the label, computed without gradients.

    Args:
        model: a classifier mapping ``tokens (B, n)`` to logits ``(B, num_classes)``.
        tokens: ``(B, n)`` long.
        labels: ``(B,)`` long.

    Returns:
        A Python ``float`` in ``[0, 1]``. Ties between logits go to the lowest class
        index (``argmax``). Run the model inside ``torch.no_grad()``; the model is not
        changed.
    """
    raise NotImplementedError("accuracy: not implemented yet")
