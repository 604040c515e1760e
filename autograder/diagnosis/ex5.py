"""ex5 known mistakes: what a common wrong implementation would return on the test's inputs.

Each function takes the grader-side reference model (with the weights the test loaded into
the student's model) and the test's inputs, and returns ``{cause: output}`` for
``checks.expect_close(..., mistakes=...)``. Everything runs in the grader, from the
reference; nothing here touches student code.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

import reference.lstm_vs_attention as ref
from autograder.diagnosis.causes import Cause
from autograder.suites.ex5_lstm_comparison.causes import Ex5Cause

from autograder.diagnosis import Candidates

FIRST_POSITION = Ex5Cause.FIRST_POSITION
NO_SCALING = Ex5Cause.NO_SCALING
SCALE_BY_D = Ex5Cause.SCALE_BY_D
WRONG_SOFTMAX_AXIS = Ex5Cause.WRONG_SOFTMAX_AXIS
NO_POSITIONS = Ex5Cause.NO_POSITIONS
MEAN_POOL = Ex5Cause.MEAN_POOL
NO_VALUE = Ex5Cause.NO_VALUE
LSTM_FIRST = Ex5Cause.LSTM_FIRST
LSTM_MEAN = Ex5Cause.LSTM_MEAN
LSTM_CELL = Ex5Cause.LSTM_CELL
LOSS_AFTER_UPDATE = Ex5Cause.LOSS_AFTER_UPDATE
NO_ZERO_GRAD = Ex5Cause.NO_ZERO_GRAD
ZERO_GRAD_BEFORE_STEP = Ex5Cause.ZERO_GRAD_BEFORE_STEP
IGNORED_LR = Ex5Cause.IGNORED_LR
SGD = Ex5Cause.SGD
DEFAULT_LR = Ex5Cause.DEFAULT_LR
GRAD_SUM_BATCH = Ex5Cause.GRAD_SUM_BATCH
GRAD_SQUARED = Ex5Cause.GRAD_SQUARED
GRAD_OF_LOSS = Ex5Cause.GRAD_OF_LOSS
GRAD_ALL_LOGITS = Ex5Cause.GRAD_ALL_LOGITS
GRAD_NORM_OF_MEAN = Ex5Cause.GRAD_NORM_OF_MEAN


# --------------------------------------------------------------------------- attention

def _attention_parts(model: ref.AttentionClassifier, x: torch.Tensor):
    q, k, v = model.W_q(x), model.W_k(x), model.W_v(x)
    return q, k, v, q @ k.transpose(-2, -1)


@torch.no_grad()
def attention_classify(model: ref.AttentionClassifier, x: torch.Tensor) -> Candidates:
    """Wrong versions of ``AttentionClassifier.classify(x)``."""
    d = x.shape[-1]
    q, k, v, raw = _attention_parts(model, x)
    good = torch.softmax(raw / math.sqrt(d), dim=-1)
    return {
        FIRST_POSITION: model.head((good @ v)[:, 0]),
        NO_SCALING: model.head((torch.softmax(raw, dim=-1) @ v)[:, -1]),
        SCALE_BY_D: model.head((torch.softmax(raw / d, dim=-1) @ v)[:, -1]),
        WRONG_SOFTMAX_AXIS: model.head((torch.softmax(raw / math.sqrt(d), dim=-2) @ v)[:, -1]),
        MEAN_POOL: model.head((good @ v).mean(dim=1)),
        NO_VALUE: model.head((good @ x)[:, -1]),
        Ex5Cause.FIRST_POSITION_UNSCALED: model.head((torch.softmax(raw, dim=-1) @ v)[:, 0]),
    }


@torch.no_grad()
def attention_embed(model: ref.AttentionClassifier, tokens: torch.Tensor) -> Candidates:
    """Wrong versions of ``AttentionClassifier.embed_inputs(tokens)``."""
    return {NO_POSITIONS: model.embed(tokens)}


@torch.no_grad()
def attention_forward(model: ref.AttentionClassifier, tokens: torch.Tensor) -> Candidates:
    """Wrong versions of ``AttentionClassifier(tokens)``."""
    x = model.embed_inputs(tokens)
    out = attention_classify(model, x)
    out[NO_POSITIONS] = model.classify(model.embed(tokens))
    return out


# --------------------------------------------------------------------------- LSTM

@torch.no_grad()
def lstm_classify(model: ref.LSTMClassifier, x: torch.Tensor) -> Candidates:
    """Wrong versions of ``LSTMClassifier.classify(x)``."""
    output, (h_n, c_n) = model.lstm(x)
    return {LSTM_FIRST: model.head(output[:, 0]),
            LSTM_MEAN: model.head(output.mean(dim=1)),
            LSTM_CELL: model.head(c_n[-1])}


@torch.no_grad()
def lstm_forward(model: ref.LSTMClassifier, tokens: torch.Tensor) -> Candidates:
    return lstm_classify(model, model.embed_inputs(tokens))


# --------------------------------------------------------------------------- gradients

def gradient_norms(model, tokens: torch.Tensor, labels: torch.Tensor) -> Candidates:
    """Wrong versions of ``input_gradient_norms(model, tokens, labels)``."""
    with torch.enable_grad():
        E = model.embed_inputs(tokens).detach().requires_grad_(True)
        logits = model.classify(E)
        (g_logit,) = torch.autograd.grad(logits.gather(1, labels[:, None]).sum(), E, retain_graph=True)
        (g_loss,) = torch.autograd.grad(F.cross_entropy(logits, labels), E, retain_graph=True)
        (g_all,) = torch.autograd.grad(logits.sum(), E)
    return {GRAD_SUM_BATCH: g_logit.norm(dim=-1).sum(dim=0),
            GRAD_SQUARED: (g_logit ** 2).sum(dim=-1).mean(dim=0),
            GRAD_OF_LOSS: g_loss.norm(dim=-1).mean(dim=0),
            Ex5Cause.GRAD_OF_LOSS_SUMMED: g_loss.norm(dim=-1).sum(dim=0),
            GRAD_ALL_LOGITS: g_all.norm(dim=-1).mean(dim=0),
            GRAD_NORM_OF_MEAN: g_logit.mean(dim=0).norm(dim=-1)}


# --------------------------------------------------------------------------- training

def _losses(model, tokens, labels, steps, optimizer, zero="every") -> list[float]:
    losses = []
    for _ in range(steps):
        if zero == "every":
            optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_losses(model, tokens: torch.Tensor, labels: torch.Tensor, steps: int, lr: float) -> Candidates:
    """Loss curves of wrong ``train`` loops, each from a copy of ``model``'s initial weights."""
    def fresh():
        return copy.deepcopy(model)

    out: dict = {}
    m = fresh()
    shifted = _losses(m, tokens, labels, steps + 1, torch.optim.Adam(m.parameters(), lr=lr))
    out[LOSS_AFTER_UPDATE] = torch.tensor(shifted[1:], dtype=torch.float64)
    m = fresh()
    out[NO_ZERO_GRAD] = torch.tensor(_losses(m, tokens, labels, steps, torch.optim.Adam(m.parameters(), lr=lr),
                                             zero="never"), dtype=torch.float64)
    out[ZERO_GRAD_BEFORE_STEP] = torch.full((steps,), shifted[0], dtype=torch.float64)
    m = fresh()
    out[SGD] = torch.tensor(_losses(m, tokens, labels, steps, torch.optim.SGD(m.parameters(), lr=lr)),
                            dtype=torch.float64)
    m = fresh()
    out[DEFAULT_LR] = torch.tensor(_losses(m, tokens, labels, steps, torch.optim.Adam(m.parameters())),
                                   dtype=torch.float64)
    return out


# --------------------------------------------------------------------------- dataset

LABELS_LAST = Ex5Cause.LABELS_LAST
LABELS_SECOND = Ex5Cause.LABELS_SECOND
LABELS_SHAPE = Ex5Cause.LABELS_SHAPE


def dataset_labels(tokens: torch.Tensor, labels: torch.Tensor) -> Cause | None:
    """Which wrong choice of labels the student's ``labels`` are, given their ``tokens``."""
    if not isinstance(tokens, torch.Tensor) or not isinstance(labels, torch.Tensor) or tokens.ndim != 2:
        return None
    variants = {LABELS_LAST: tokens[:, -1], LABELS_SHAPE: tokens[:, :1]}
    if tokens.shape[1] > 1:
        variants[LABELS_SECOND] = tokens[:, 1]
    for cause, want in variants.items():
        if tuple(labels.shape) == tuple(want.shape) and torch.equal(labels, want):
            return cause
    return None
