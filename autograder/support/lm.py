"""A tiny causal language model for testing ``greedy_generate``, built deterministically.

The worker builds the model the student's ``greedy_generate`` is called with; the
grading process builds the *same* model (same seed or same weights, importing this
module normally) to compute what it expects. The model is causal for real (position i
sees only positions ≤ i), depends on the whole context (so truncating the context or
reading the wrong position changes the answer), and can force exact ties in the logits
(so "the lowest index wins on ties" is tested, not left to chance).

Only torch is used; the model has no dropout and is fully deterministic, and is always
float32 on the CPU (explicitly: never the default dtype or device a student file may set).
"""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["TinyCausalLM", "build"]


class TinyCausalLM(nn.Module):
    """Embedding + learned positions + a causal prefix-mean mixer + output projection.

    Position i mixes the values of positions 0..i only (their running mean), so the model
    is causal and depends on the whole context without being an attention layer itself:
    it ships with the students' public tests and should not hand them ex4's answer.

    ``forward(ids (B, t)) -> logits (B, t, vocab_size)``.

    ``tie_period``: when set (``< vocab_size``), the model computes ``tie_period`` base
    logits and token ``j`` gets exactly the logit of base token ``j % tie_period``, so the
    largest logit is always shared by several tokens and only the lowest-index rule
    decides. ``call_shapes`` records the shape of every input the model was called with;
    ``calls_with_grad`` counts the calls made while autograd was recording (generation
    belongs inside ``torch.no_grad()``).
    """

    def __init__(self, vocab_size: int, d_model: int = 8, max_len: int = 64,
                 tie_period: int | None = None):
        super().__init__()
        self.vocab_size = int(vocab_size)
        self.tie_period = None if tie_period is None else int(tie_period)
        base = self.tie_period or self.vocab_size
        own = {"dtype": torch.float32, "device": "cpu"}     # never the defaults a student file set
        self.embed = nn.Embedding(self.vocab_size, d_model, **own)
        self.pos = nn.Embedding(max_len, d_model, **own)
        self.W_v = nn.Linear(d_model, d_model, bias=False, **own)
        self.out = nn.Linear(d_model, base, **own)
        self.call_shapes: list[list[int]] = []
        self.calls_with_grad = 0

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if len(self.call_shapes) < 10_000:
            self.call_shapes.append(list(ids.shape))
        self.calls_with_grad += int(torch.is_grad_enabled())
        ids = torch.as_tensor(ids)
        t = ids.shape[-1]
        x = self.embed(ids) + self.pos(torch.arange(t, device=ids.device))        # (B, t, d)
        v = self.W_v(x)                                                            # (B, t, d)
        counts = torch.arange(1, t + 1, device=ids.device, dtype=v.dtype).unsqueeze(-1)   # (t, 1)
        h = x + v.cumsum(dim=-2) / counts                                          # (B, t, d)
        logits = self.out(torch.tanh(h))                                           # (B, t, base)
        if self.tie_period is not None:
            index = torch.arange(self.vocab_size, device=ids.device) % self.tie_period
            logits = logits.index_select(-1, index)                                # exact copies
        return logits


def build(vocab_size: int, seed: int, d_model: int = 8, max_len: int = 64,
          tie_period: int | None = None, scale: float = 1.5, favourite: int | None = None) -> TinyCausalLM:
    """A ``TinyCausalLM`` whose weights depend only on ``seed`` (same in every process).
    ``favourite``: a token whose output bias is raised so far above the others' that it is
    every row's next token at every step, whatever the context (and never a tie)."""
    model = TinyCausalLM(vocab_size, d_model, max_len, tie_period)
    g = torch.Generator(device="cpu").manual_seed(int(seed))
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype, device="cpu")
                    * scale / math.sqrt(max(1, p.shape[-1])))
        if favourite is not None:
            model.out.bias[int(favourite) % model.out.bias.shape[0]] += 100.0
    return model.requires_grad_(False)

