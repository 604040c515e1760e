"""ex4 known mistakes: causal masks, KV-cache decoding and greedy generation gone wrong.

Each function takes the test's own inputs and returns ``{cause: output}`` computed here,
in the grading process (torch/NumPy in float64; the tiny LM is the kit's own copy).
Masked scores are filled with -1e9 so that a variant with a fully masked row still has
a finite output to compare with.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograder.diagnosis import Candidates, pairs
from autograder.diagnosis.causes import Diagnosis, diagnosis_of
from autograder.suites.ex4_causal_mask.causes import Ex4Cause

STRICT = Ex4Cause.STRICT
INVERTED = Ex4Cause.INVERTED
BLOCKS_TRUE = Ex4Cause.BLOCKS_TRUE
NO_MASK = Ex4Cause.NO_MASK
AFTER = Ex4Cause.MASK_AFTER
ZERO = Ex4Cause.MASK_ZERO
NO_SCALE = Ex4Cause.NO_SCALE
SCALE_DMODEL = Ex4Cause.SCALE_D_MODEL
WRONG_AXIS = Ex4Cause.WRONG_AXIS
NEXT_NO_SCALE = Ex4Cause.NEXT_NO_SCALE
NEXT_BATCH_SOFTMAX = Ex4Cause.NEXT_BATCH_SOFTMAX
NEXT_LAST_ONLY = Ex4Cause.NEXT_LAST_ONLY
NEXT_FIRST_ONLY = Ex4Cause.NEXT_FIRST_ONLY
NEXT_SKIPS_NEWEST = Ex4Cause.NEXT_SKIPS_NEWEST
GEN_FIRST_POS = Ex4Cause.GEN_FIRST_POSITION
GEN_NO_PROMPT = Ex4Cause.GEN_NO_PROMPT
GEN_LAST_TOKEN = Ex4Cause.GEN_LAST_TOKEN
GEN_ONCE = Ex4Cause.GEN_ONCE
GEN_HIGHEST_TIE = Ex4Cause.GEN_HIGHEST_TIE


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
    return [(cause, _causal(x, W_q, W_k, W_v, **flags)[i]) for cause, flags in variants]


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
    elif K.shape[1] > 1:                                # all the weight on one key
        out[NEXT_LAST_ONLY] = _all_on_key(K, K.shape[1] - 1)
        out[NEXT_FIRST_ONLY] = _all_on_key(K, 0)
    return out


def _all_on_key(K: torch.Tensor, key: int) -> torch.Tensor:
    """Weights (B, t), float64, that put everything on key ``key`` of the cache ``K`` (B, t, d)."""
    weights = torch.zeros(K.shape[:2], dtype=torch.float64)
    weights[:, key] = 1.0
    return weights


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

    def run(position=-1, feed="all", pick=_first_max, once=False, keep_prompt=True, steps=max_new_tokens):
        ids = prompt.clone()
        with torch.no_grad():
            first = model(prompt)
            for _ in range(steps):
                logits = first if once else model(ids if feed == "all" else ids[:, -1:])
                ids = torch.cat([ids, pick(logits[:, position, :])[:, None]], dim=1)
        return ids if keep_prompt else ids[:, prompt.shape[1]:]

    out = {GEN_FIRST_POS: run(position=0), GEN_LAST_TOKEN: run(feed="last"),
           GEN_ONCE: run(once=True), GEN_HIGHEST_TIE: run(pick=_last_max),
           GEN_NO_PROMPT: run(keep_prompt=False)}
    if max_new_tokens >= 1:
        out[Ex4Cause.GEN_TOO_FEW_TOKENS] = run(steps=max_new_tokens - 1)
    return list(out.items()) + _stops_at_a_shared_token(run(), prompt.shape[1])


def _stops_at_a_shared_token(want: torch.Tensor, prompt_len: int) -> list[tuple[Ex4Cause, torch.Tensor]]:
    """What an end-of-sequence check returns: greedy decoding ``want`` (B, t + k) cut just
    before a step at which every row's next token is one and the same token (the only steps
    where ``(next_id == eos).all()`` can stop the loop, whatever ``eos`` is)."""
    generated = want[:, prompt_len:]                                   # (B, k)
    shared = (generated == generated[:1]).all(dim=0)                   # (k,): one token in every row
    return [(Ex4Cause.GEN_STOPPED_EARLY, want[:, :prompt_len + step])
            for step in shared.nonzero().flatten().tolist()]


def name_generation_mistake(got: Any, candidates: Candidates) -> Diagnosis | None:
    """The causes whose token ids equal ``got`` exactly (shape included), if any (``Several``
    when several fit)."""
    if not isinstance(got, (torch.Tensor, np.ndarray)):
        return None
    got_t = torch.as_tensor(np.asarray(got) if isinstance(got, np.ndarray) else got).detach()
    hits = []
    for cause, ids in pairs(candidates):
        ids = torch.as_tensor(ids)
        if tuple(ids.shape) == tuple(got_t.shape) and torch.equal(ids.to(torch.long), got_t.to(torch.long)):
            hits.append(cause)
    return diagnosis_of(hits)
