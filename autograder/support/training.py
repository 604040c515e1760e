"""ex5 helpers that run inside the worker, next to the student's models.

Everything here returns plain data (dicts, lists, str, int, float, bool, tensors) and
contains no expected values: the grader decides what is right. The kit's own training
loop lives here so that the end-to-end check trains the student's model with code the
student did not write.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

from torch import nn

__all__ = ["describe", "grads", "set_grads", "outputs_share_memory", "seeded", "kit_train", "KitClassifier",
           "kit_classifier"]


def describe(module: Any) -> dict[str, Any]:
    """What a model is made of: its direct children, its parameters, and LSTM settings.

    Returns ``{"is_module": bool, "type": str, "children": {name: type name},
    "parameters": {dotted name: shape list}, "lstm": {child name: settings} }``.
    """
    info: dict = {"is_module": isinstance(module, nn.Module), "type": type(module).__name__,
                  "children": {}, "parameters": {}, "lstm": {}, "linear": {}, "embedding": {}}
    if not info["is_module"]:
        return info
    for name, child in module.named_children():
        info["children"][name] = type(child).__name__
        if isinstance(child, nn.LSTM):
            info["lstm"][name] = {
                "input_size": int(child.input_size), "hidden_size": int(child.hidden_size),
                "num_layers": int(child.num_layers), "batch_first": bool(child.batch_first),
                "bidirectional": bool(child.bidirectional), "bias": bool(child.bias),
                "proj_size": int(getattr(child, "proj_size", 0)),
                "dropout": float(child.dropout)}
        elif isinstance(child, nn.Linear):
            info["linear"][name] = {"in_features": int(child.in_features),
                                    "out_features": int(child.out_features),
                                    "bias": child.bias is not None}
        elif isinstance(child, nn.Embedding):
            info["embedding"][name] = {"num_embeddings": int(child.num_embeddings),
                                       "embedding_dim": int(child.embedding_dim)}
    for name, param in module.named_parameters():
        info["parameters"][name] = [int(d) for d in param.shape]
    return info


def grads(module: nn.Module) -> dict[str, Any]:
    """``{parameter name: a copy of its .grad, or None}``."""
    return {name: (None if p.grad is None else p.grad.detach().clone())
            for name, p in module.named_parameters()}


def set_grads(module: nn.Module, seed: int) -> None:
    """Give every parameter a ``.grad`` filled with seeded random numbers."""
    g = torch.Generator(device="cpu").manual_seed(int(seed))
    with torch.no_grad():
        for p in module.parameters():
            p.grad = torch.randn(p.shape, generator=g, dtype=p.dtype, device="cpu").to(p.device)


def outputs_share_memory(fn: Callable, *args: Any) -> list[list[bool]]:
    """Call ``fn(*args)`` and report, for each pair of returned tensors, whether they share memory.

    Entry ``[i][j]`` is True when output ``i`` and output ``j`` use the same storage (one is a
    view of the other). Outputs that are not tensors or arrays never share.
    """
    out = fn(*args)
    items = list(out) if isinstance(out, (tuple, list)) else [out]

    def storage(x: Any):
        if isinstance(x, torch.Tensor):
            try:
                return x.untyped_storage().data_ptr()
            except Exception:   # noqa: BLE001 - exotic tensors: treat as not shared
                return None
        return None

    ptrs = [storage(x) for x in items]
    return [[i != j and a is not None and a == b for j, b in enumerate(ptrs)]
            for i, a in enumerate(ptrs)]


def seeded(fn: Callable, seed: int, *args: Any) -> Any:
    """``fn(*args)`` right after ``torch.manual_seed(seed)``: a model built as a procedure
    that seeds torch before each model builds it (its initial weights, for the grader to
    compare with a default-initialised one)."""
    torch.manual_seed(int(seed))
    return fn(*args)


def kit_train(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor,
              steps: int, lr: float, seed: int | None = 0) -> list[float]:
    """The kit's own full-batch Adam loop (cross-entropy); returns each step's loss.

    Only the student's ``forward`` is used; the optimisation is the kit's. torch's global
    generator is seeded with ``seed`` first (for a model that draws random numbers while it
    trains); ``seed=None`` leaves it alone (the grader's reference, which draws none, trained
    on a thread beside the tests: ``suites/ex5_lstm_comparison/recall.py``).
    """
    if seed is not None:
        torch.manual_seed(int(seed))
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=float(lr))
    losses: list[float] = []
    with torch.enable_grad():
        for _ in range(int(steps)):
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    return losses


class KitClassifier(nn.Module):
    """A small classifier of the kit's own, with the same interface as the exercise's models.

    ``embed_inputs(tokens) = embed(tokens)``; ``classify(x)`` mixes each position with a
    tanh layer, pools the positions with learned softmax weights and applies ``head``.
    The hidden tests hand it to ``train``, ``accuracy`` and ``input_gradient_norms`` so that
    those functions are judged apart from the student's own models. Built the same way in
    the grader (from this module) and in the worker (from the kit's pristine copy).
    ``calls_with_grad`` counts the forward calls made while autograd was recording.
    """

    def __init__(self, vocab_size: int, d_model: int, num_classes: int, max_len: int,
                 seed: int) -> None:
        super().__init__()
        own = {"dtype": torch.float32, "device": "cpu"}     # never the defaults a student file set
        self.embed = nn.Embedding(vocab_size, d_model, **own)
        self.mix = nn.Linear(d_model, d_model, **own)
        self.pool = nn.Parameter(torch.zeros(max_len, **own))
        self.head = nn.Linear(d_model, num_classes, **own)
        self.calls_with_grad = 0
        g = torch.Generator(device="cpu").manual_seed(int(seed))
        with torch.no_grad():                      # seeded, independent of the global RNG
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g, **own) * 0.7)

    def embed_inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embed(tokens)

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        weights = torch.softmax(self.pool[: x.shape[1]], dim=0)            # (n,)
        pooled = (weights[:, None] * torch.tanh(self.mix(x))).sum(dim=1)   # (B, d_model)
        return self.head(pooled)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        self.calls_with_grad += int(torch.is_grad_enabled())
        return self.classify(self.embed_inputs(tokens))


def kit_classifier(vocab_size: int, d_model: int, num_classes: int, max_len: int,
                   seed: int) -> KitClassifier:
    return KitClassifier(vocab_size, d_model, num_classes, max_len, seed)
