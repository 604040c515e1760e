"""ex5 known mistakes: what a common wrong implementation would return on the test's inputs.

Each function takes the grader-side reference model (with the weights the test loaded into
the student's model) and the test's inputs, and returns ``{hint: output}`` for
``checks.expect_close(..., mistakes=...)``. Everything runs in the grader, from the
reference; nothing here touches student code.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

import reference.lstm_vs_attention as ref

from autograder.diagnosis import Candidates

FIRST_POSITION = ("you classify from the attention output at the first position; the task "
                  "reads the answer at the LAST position (a[:, -1]), which must look back "
                  "to position 0")
NO_SCALING = ("the attention scores are not divided by √d_model: use "
              "softmax(q kᵀ / √d) with d = x.shape[-1]")
SCALE_BY_D = "the scores are divided by d_model instead of √d_model"
WRONG_SOFTMAX_AXIS = ("the softmax runs over the queries (dim=-2); each query's weights "
                      "must sum to 1 over the keys (dim=-1)")
NO_POSITIONS = ("the positional embeddings are missing: embed_inputs must return "
                "embed(tokens) + pos(arange(n)), otherwise attention cannot tell where "
                "the first token is")
MEAN_POOL = ("you average the attention output over all positions; the spec classifies "
             "from the last position only")
NO_VALUE = "the attention weights multiply x itself; they must multiply v = W_v(x)"
LSTM_FIRST = ("you classify from the LSTM output at position 0 (output[:, 0]); use the final "
              "hidden state h_n, i.e. the state after the last position")
LSTM_MEAN = ("you average the LSTM outputs over time; use the final hidden state h_n "
             "(the state after the last position)")
LSTM_CELL = "you classify from the cell state c_n; use the hidden state h_n"
LOSS_AFTER_UPDATE = ("your losses are shifted by one step: each is measured after the "
                     "optimiser step. Record the loss computed before optimizer.step()")
NO_ZERO_GRAD = ("gradients accumulate across steps: call optimizer.zero_grad() at the "
                "start of every step")
ZERO_GRAD_BEFORE_STEP = ("the loss never changes: the gradients are zeroed between backward() "
                         "and optimizer.step(); zero them at the start of each step instead")
IGNORED_LR = ("the losses match lr=1e-2 whatever lr is passed: give the lr argument to "
              "torch.optim.Adam")
SGD = "the losses match SGD, not Adam: use torch.optim.Adam(model.parameters(), lr=lr)"
DEFAULT_LR = ("the losses match Adam's default learning rate (1e-3); pass lr=lr to "
              "torch.optim.Adam")
GRAD_SUM_BATCH = "you sum the per-sample gradient norms over the batch; take the mean"
GRAD_SQUARED = "you use the squared L2 norm; take the L2 norm itself (torch.linalg.norm / .norm())"
GRAD_OF_LOSS = ("you differentiate the cross-entropy loss; the spec differentiates "
                "sum_b classify(E)[b, labels[b]], the correct-class logit")
GRAD_ALL_LOGITS = ("you differentiate the sum of all logits; take only each sample's "
                   "correct-class logit, logits[b, labels[b]]")
GRAD_NORM_OF_MEAN = ("you take the norm of the batch-mean gradient; take each sample's norm "
                     "first, then the mean over the batch")


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
        FIRST_POSITION + " (and the scores are not scaled)":
            model.head((torch.softmax(raw, dim=-1) @ v)[:, 0]),
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
            GRAD_OF_LOSS + " (and sum it over the batch)": g_loss.norm(dim=-1).sum(dim=0),
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

LABELS_LAST = ("the labels are the LAST token of each sequence (tokens[:, -1]); the task is to recall "
               "the FIRST one: labels = tokens[:, 0].clone()")
LABELS_SECOND = "the labels are tokens[:, 1]: the task recalls the first token, tokens[:, 0] (indices start at 0)"
LABELS_SHAPE = "the labels keep a sequence axis (tokens[:, :1] or tokens[:, [0]]): take tokens[:, 0], shape (num_samples,)"


def dataset_labels(tokens: torch.Tensor, labels: torch.Tensor) -> str | None:
    """Which wrong choice of labels the student's ``labels`` are, given their ``tokens``."""
    if not isinstance(tokens, torch.Tensor) or not isinstance(labels, torch.Tensor) or tokens.ndim != 2:
        return None
    variants = {LABELS_LAST: tokens[:, -1], LABELS_SHAPE: tokens[:, :1]}
    if tokens.shape[1] > 1:
        variants[LABELS_SECOND] = tokens[:, 1]
    for hint, want in variants.items():
        if tuple(labels.shape) == tuple(want.shape) and torch.equal(labels, want):
            return hint
    return None
