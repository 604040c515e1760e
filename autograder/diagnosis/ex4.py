"""ex4 known mistakes: causal masks, KV-cache decoding and greedy generation gone wrong.

Each function takes the test's own inputs and returns ``{hint: output}`` computed here,
in the grading process (torch/NumPy in float64; the tiny LM is the kit's own copy).
Masked scores are filled with -1e9 so that a variant with a fully masked row still has
a finite output to compare with.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograder.diagnosis import Candidates

STRICT = ("your mask hides the diagonal too (like tril(…, diagonal=-1)): position i may attend "
          "to itself, mask[i, j] = (j <= i)")
INVERTED = ("your result matches a causal mask that is inverted (upper-triangular): in this course "
            "`True` means *may attend*, and position i may attend to positions j <= i")
BLOCKS_TRUE = ("your result matches treating `True` in the causal mask as *blocked*: in this course "
               "`True` means may attend, so fill the scores where the mask is False")
NO_MASK = "your result matches attention with no causal mask: position i must not see positions j > i"
AFTER = ("your result matches masking *after* the softmax (zeroing without renormalising): fill "
         "the scores above the diagonal with -inf (or -1e9) *before* the softmax")
ZERO = ("your result matches setting future scores to 0 (e.g. scores * mask): a score of 0 still "
        "gets weight; fill with -inf or -1e9")
NO_SCALE = "your result matches attention without the 1/√d_k scaling (d_k = W_q.shape[-1])"
SCALE_DMODEL = "your result matches scaling by √d_model instead of √d_k: d_k is the projected size, W_q.shape[-1]"
WRONG_AXIS = "your weights are normalised over the queries (dim -2) instead of over the keys (the last dim)"

NEXT_NO_SCALE = "your result matches attend_next without the 1/√d_k scaling"
NEXT_BATCH_SOFTMAX = ("your weights are normalised over the batch (dim 0) instead of over the t "
                      "cached positions (the last dim)")
NEXT_LAST_ONLY = ("your output matches the newest cached value alone: the new query attends to "
                  "all t cached positions")
NEXT_FIRST_ONLY = ("your output matches the first cached value alone: the new query attends to "
                   "all t cached positions")
NEXT_SKIPS_NEWEST = ("your output matches attending to the first t−1 cached positions only: the cache "
                     "already holds the newest position, which attends to itself")

GEN_FIRST_POS = ("your tokens match using the logits of the *first* position: the next token comes "
                 "from the last position, logits[:, -1, :]")
GEN_NO_PROMPT = "your result holds only the new tokens: it must start with the prompt, (B, t + max_new_tokens)"
GEN_LAST_TOKEN = ("your tokens match feeding the model only the newest token: call the model on the "
                  "whole sequence so far at each step")
GEN_ONCE = ("your tokens match computing the logits once, from the prompt only: call the model again "
            "on the extended sequence at every step")
GEN_HIGHEST_TIE = ("your tokens match picking the *highest* index among tied logits: on ties the "
                   "lowest token index wins (what torch.argmax does)")


def f64(x: Any) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x) if isinstance(x, np.ndarray) else x).detach().to(torch.float64)


def _causal(x, W_q, W_k, W_v, *, mask: str = "tril", scale: str = "d_k",
            axis: int = -1, how: str = "fill") -> tuple[torch.Tensor, torch.Tensor]:
    x, W_q, W_k, W_v = (f64(t) for t in (x, W_q, W_k, W_v))
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    n = x.shape[-2]
    s = q @ k.transpose(-2, -1)
    if scale == "d_k":
        s = s / math.sqrt(q.shape[-1])
    elif scale == "d_model":
        s = s / math.sqrt(x.shape[-1])
    ones = torch.ones(n, n, dtype=torch.bool)
    allowed = {"tril": ones.tril(), "strict": ones.tril(-1), "triu": ones.triu(),
               "blocks_true": ~ones.tril(), "none": ones}[mask]
    if how == "fill":
        s = s.masked_fill(~allowed, -1e9)
    elif how == "zero":
        s = s.masked_fill(~allowed, 0.0)
    w = torch.softmax(s, dim=axis)
    if how == "after":
        w = w.masked_fill(~allowed, 0.0)
    return w @ v, w


def causal(x, W_q, W_k, W_v, part: str = "output") -> Candidates:
    """Known wrong ``causal_self_attention`` results; ``part`` is ``"output"`` or ``"weights"``."""
    i = 0 if part == "output" else 1
    variants = [(INVERTED, {"mask": "triu"}), (BLOCKS_TRUE, {"mask": "blocks_true"}),
                (STRICT, {"mask": "strict"}), (NO_MASK, {"mask": "none"}), (AFTER, {"how": "after"}),
                (ZERO, {"how": "zero"}), (NO_SCALE, {"scale": "none"}), (WRONG_AXIS, {"axis": -2})]
    if W_q.shape[-1] != W_q.shape[0]:
        variants.append((SCALE_DMODEL, {"scale": "d_model"}))
    return {hint: _causal(x, W_q, W_k, W_v, **flags)[i] for hint, flags in variants}


def attend_next(q_t, K_cache, V_cache, part: str = "output") -> Candidates:
    q, K, V = f64(q_t), f64(K_cache), f64(V_cache)
    i = 0 if part == "output" else 1

    def attend(q, K, V, scale=True, dim=-1):
        s = (K @ q.unsqueeze(-1)).squeeze(-1)
        if scale:
            s = s / math.sqrt(q.shape[-1])
        w = torch.softmax(s, dim=dim)
        return (w.unsqueeze(1) @ V).squeeze(1), w

    out = {NEXT_NO_SCALE: attend(q, K, V, scale=False)[i],
           NEXT_BATCH_SOFTMAX: attend(q, K, V, dim=0)[i]}
    if part == "output":
        out[NEXT_LAST_ONLY] = V[:, -1]
        out[NEXT_FIRST_ONLY] = V[:, 0]
        if K.shape[1] > 1:
            out[NEXT_SKIPS_NEWEST] = attend(q, K[:, :-1], V[:, :-1])[0]
    return out


# --------------------------------------------------------------------------- generation

def _first_max(logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(dim=-1)                      # CPU argmax: the first maximal index


def _last_max(logits: torch.Tensor) -> torch.Tensor:
    vocab = logits.shape[-1]
    return vocab - 1 - logits.flip(-1).argmax(dim=-1)


def greedy(model: Callable[[torch.Tensor], torch.Tensor], prompt: torch.Tensor,
           max_new_tokens: int) -> Candidates:
    """Known wrong ``greedy_generate`` results, produced with the grader's copy of the model."""
    prompt = torch.as_tensor(prompt).to(torch.long)

    def run(position=-1, feed="all", pick=_first_max, once=False, keep_prompt=True):
        ids = prompt.clone()
        with torch.no_grad():
            first = model(prompt)
            for _ in range(max_new_tokens):
                logits = first if once else model(ids if feed == "all" else ids[:, -1:])
                ids = torch.cat([ids, pick(logits[:, position, :])[:, None]], dim=1)
        return ids if keep_prompt else ids[:, prompt.shape[1]:]

    out = {GEN_FIRST_POS: run(position=0), GEN_LAST_TOKEN: run(feed="last"),
           GEN_ONCE: run(once=True), GEN_HIGHEST_TIE: run(pick=_last_max),
           GEN_NO_PROMPT: run(keep_prompt=False)}
    return out


def name_generation_mistake(got: Any, candidates: Candidates) -> str | None:
    """The hints whose token ids equal ``got`` exactly (shape included), if any (joined)."""
    if not isinstance(got, (torch.Tensor, np.ndarray)):
        return None
    got_t = torch.as_tensor(np.asarray(got) if isinstance(got, np.ndarray) else got).detach()
    hits = []
    for hint, ids in candidates.items():
        ids = torch.as_tensor(ids)
        if tuple(ids.shape) == tuple(got_t.shape) and torch.equal(ids.to(torch.long), got_t.to(torch.long)):
            hits.append(hint)
    return "\n  or: ".join(hits) if hits else None
