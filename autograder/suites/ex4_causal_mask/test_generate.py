"""ex4 · greedy_generate with the kit's tiny causal language model.

The worker builds the model from a seed (``autograder.support.lm``); the grader builds the
very same model here and runs the reference on it.
"""
from __future__ import annotations

import pytest
import torch

import reference.causal as ref
from autograder.diagnosis import ex4 as mistakes
from autograder.suites.ex4_causal_mask.causes import Ex4Cause
from autograder.suites import checks, contract_rules
from autograder.suites.ex4_causal_mask import common
from autograder.support import lm

NAME = "greedy_generate"
VOCAB = 11


def _prompt(offset: int, B: int, t: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (B, t), generator=common.gen(700 + offset))


def _models(support, offset: int, tie_period: int | None = None,
            prompt: torch.Tensor | None = None, k: int = 0, varied: bool = False):
    """(the tiny LM in the worker, the same LM here), from the test's seed number ``offset``;
    with ``prompt``, the first of a few candidate seeds whose greedy continuation of it has
    clear margins (random weights could put two logits within rounding of each other) and,
    with ``varied``, changes token in some row (a tiny random LM often repeats one token, and
    then logits computed once, from the prompt alone, give the right answer) and differs
    from the continuations that see only the newest token or only the last prompt-length
    tokens (on some models a short window happens to give the same tokens). With
    ``tie_period``, a candidate on whose ties ``torch.topk`` picks another index than the
    lowest is preferred: its tie order is unspecified and on about 1 model in 12 it picks
    the lowest at every step, so the ties would not tell. A candidate with clear margins
    is kept in case no candidate shows it (a future torch may break ties like argmax)."""
    fallback = None
    for attempt in range(40):
        kwargs = {"vocab_size": VOCAB, "seed": common.seed(offset + 1000 * attempt), "tie_period": tie_period}
        local = lm.build(**kwargs)
        if prompt is None:
            return support.lm.build(**kwargs), local
        want = ref.greedy_generate(local, prompt, k)
        logits = _step_logits(local, want, prompt.shape[1])
        if not _margins_ok(logits, tie_period):
            continue
        if varied and not (_changes_token(want, prompt.shape[1]) and _needs_whole_context(local, prompt, want)):
            continue
        if tie_period is None or _topk_breaks_a_tie_differently(logits):
            return support.lm.build(**kwargs), local
        fallback = fallback or kwargs
    if fallback is not None:
        return support.lm.build(**fallback), lm.build(**fallback)
    raise RuntimeError("internal: no candidate test model has clear margins (and a varied continuation)")


def _step_logits(model, ids: torch.Tensor, prompt_len: int) -> list[torch.Tensor]:
    """The next-token logits, (B, vocab) each, at every generation step of the greedy
    continuation ``ids`` (B, prompt_len + k)."""
    with torch.no_grad():
        return [model(ids[:, :end])[:, -1, :] for end in range(prompt_len, ids.shape[1])]


def _topk_breaks_a_tie_differently(step_logits: list[torch.Tensor]) -> bool:
    """At some step ``topk(1)`` does not pick the lowest of the tied top tokens (as argmax does)."""
    return any(not torch.equal(logits.topk(1, dim=-1).indices, logits.argmax(dim=-1, keepdim=True))
               for logits in step_logits)                                       # (B, 1) each


def _changes_token(ids: torch.Tensor, prompt_len: int) -> bool:
    """Some row's generated tokens are not all the same token."""
    generated = ids[:, prompt_len:]                                    # (B, k)
    return bool((generated != generated[:, :1]).any())


def _needs_whole_context(model, prompt: torch.Tensor, want: torch.Tensor) -> bool:
    """Greedy decoding that feeds the model only the newest token, or only a window as long
    as the prompt, gives other tokens than ``want`` (B, t + k) somewhere."""
    t, k = prompt.shape[1], want.shape[1] - prompt.shape[1]
    for window in (1, t):
        ids = prompt.clone()
        with torch.no_grad():
            for _ in range(k):
                logits = model(ids[:, -window:])[:, -1, :]                 # (B, vocab)
                ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
        if torch.equal(ids, want):
            return False
    return True


def _margins_ok(step_logits: list[torch.Tensor], tie_period: int | None) -> bool:
    """Grader sanity: away from forced ties, the top logit wins by a clear margin."""
    for logits in step_logits:
        distinct = logits if tie_period is None else logits[:, :tie_period]   # (B, tie_period)
        top = distinct.topk(2, dim=-1).values
        if float((top[:, 0] - top[:, 1]).min()) < 1e-4:
            return False
    return True


TIE_HINT = Ex4Cause.GEN_TIES_NOT_LOWEST


def _broke_a_tie(model, got: torch.Tensor, want: torch.Tensor, prompt_len: int) -> bool:
    """At the first step where ``got`` leaves greedy decoding, every row that differs took
    another of the tokens sharing the largest logit (on the context both still agree on):
    a tie broken the wrong way, not a different mistake (a shortened context, say)."""
    steps = (got != want).any(dim=0).nonzero()
    if not len(steps) or int(steps[0]) < prompt_len:
        return False
    p = int(steps[0])
    with torch.no_grad():
        logits = model(want[:, :p])[:, -1, :]                                      # (B, vocab)
    rows = (got[:, p] != want[:, p]).nonzero().flatten().tolist()
    tokens = [int(got[r, p]) for r in rows]
    return all(0 <= t < logits.shape[-1] and float(logits[r, t]) == float(logits[r].max())
               for r, t in zip(rows, tokens))


def _check(student, support, seed, prompt, k, tie_period=None, varied=False):
    remote, local = _models(support, seed, tie_period, prompt, k, varied)
    inputs = checks.describe_inputs(prompt=prompt, max_new_tokens=k) + \
        (", a model whose largest logit is shared by several tokens" if tie_period else "")
    got = getattr(student.causal, NAME)(remote, prompt, k)
    want = ref.greedy_generate(local, prompt, k)
    got = common.expect_tensor(got, f"{NAME}(model, prompt, {k})")
    hint = mistakes.name_generation_mistake(got, mistakes.greedy(local, prompt, k)) \
        if not (tuple(got.shape) == tuple(want.shape) and torch.equal(got.long(), want)) else None
    if hint is None and tie_period is not None and tuple(got.shape) == tuple(want.shape) \
            and torch.equal(got[:, :prompt.shape[1]].long(), prompt.long()) \
            and _broke_a_tie(local, got.long(), want, prompt.shape[1]):
        hint = TIE_HINT                       # another of the tied top tokens was taken
    if tuple(got.shape) != tuple(want.shape):
        checks.fail(f"{NAME}(model, prompt, {k}): expected shape {tuple(want.shape)}, got "
                    f"{tuple(got.shape)} (inputs: {inputs})", hint)
    if got.dtype != prompt.dtype:
        checks.fail(f"{NAME}(model, prompt, {k}): expected dtype {prompt.dtype} (the prompt's), got {got.dtype}")
    if not torch.equal(got[:, :prompt.shape[1]], prompt):
        checks.fail(f"{NAME}(model, prompt, {k}): the first {prompt.shape[1]} columns must be the prompt "
                    f"(inputs: {inputs})", hint)
    wrong = int((got != want).sum())
    if wrong:
        steps = (got != want).any(dim=0).nonzero()
        first = int(steps[0]) - prompt.shape[1] + 1 if len(steps) else 0
        checks.fail(f"{NAME}(model, prompt, {k}): {wrong} of {want.numel()} tokens differ from greedy "
                    f"decoding, first at generation step {first} (inputs: {inputs})", hint)


@pytest.mark.points(3)
@pytest.mark.covers("greedy_generate")
@pytest.mark.contract("greedy_generate/argmax")
def test_generate_matches_reference(student, support):
    """greedy_generate matches greedy decoding on a tiny causal LM (B > 1)"""
    _check(student, support, 1, _prompt(1, 3, 4), 6, varied=True)


@pytest.mark.points(1)
@pytest.mark.covers("greedy_generate")
@pytest.mark.contract("greedy_generate/result", "greedy_generate/signature")
def test_generate_keeps_prompt_shape_dtype(student, support):
    """greedy_generate returns a long tensor (B, t + max_new_tokens) starting with the prompt"""
    prompt = _prompt(2, 2, 3)
    remote, _ = _models(support, 2)
    inputs = checks.describe_inputs(prompt=prompt, max_new_tokens=4)
    got = common.expect_tensor(getattr(student.causal, NAME)(remote, prompt, 4), f"{NAME}(model, prompt, 4)")
    checks.expect_shape(got, (2, 7), f"{NAME}(model, prompt, 4)", inputs)
    checks.expect_dtype(got, torch.long, f"{NAME}(model, prompt, 4)")
    if not torch.equal(got[:, :3], prompt):
        checks.fail(f"{NAME}(model, prompt, 4): the first 3 columns must be the prompt (inputs: {inputs})")
    if bool(((got < 0) | (got >= VOCAB)).any()):
        checks.fail(f"{NAME}(model, prompt, 4): generated ids must be token indices in 0 … vocab−1 "
                    f"(inputs: {inputs})")


@pytest.mark.points(2.5)
@pytest.mark.covers("greedy_generate")
@pytest.mark.contract("greedy_generate/argmax")
@pytest.mark.covers("greedy_generate:ties")
def test_generate_ties_lowest_index(student, support):
    """greedy_generate breaks ties in the logits towards the lowest token index"""
    _check(student, support, 3, _prompt(3, 3, 2), 5, tie_period=4)


@pytest.mark.points(1)
@pytest.mark.covers("greedy_generate")
@pytest.mark.contract("greedy_generate/argmax", "conventions/inputs")
@pytest.mark.covers("greedy_generate:inputs/tensor", "greedy_generate:size/B = 1, a one-token prompt")
def test_generate_single_row_and_prompt_kept(student, support):
    """greedy_generate with B = 1 and a one-token prompt; the prompt is not modified"""
    prompt = _prompt(4, 1, 1)
    remote, local = _models(support, 4, None, prompt, 7)     # the model _check uses
    _check(student, support, 4, prompt, 7)
    with checks.calling(f"causal.{NAME}"):
        result, changes = contract_rules.call_and_check_unchanged(support, getattr(student.causal, NAME),
                                                                  [remote, prompt, 3])
    common.expect_unchanged(changes[1:2], ["prompt"], NAME)
    want = ref.greedy_generate(local, prompt, 3)
    if not (isinstance(result, torch.Tensor) and tuple(result.shape) == tuple(want.shape)
            and torch.equal(result, want)):
        checks.fail(f"{NAME}(model, prompt, 3): not the greedy continuation of the prompt "
                    f"(inputs: {checks.describe_inputs(prompt=prompt, max_new_tokens=3)})")


@pytest.mark.points(1)
@pytest.mark.covers("greedy_generate")
@pytest.mark.contract("greedy_generate/argmax", "greedy_generate/result")
def test_generate_does_not_stop_early(student, support):
    """greedy_generate appends max_new_tokens tokens even when every row's next token is 0 at every step"""
    prompt, k = _prompt(6, 2, 3), 5
    kwargs = {"vocab_size": VOCAB, "seed": common.seed(6), "favourite": 0}     # token 0 wins each step
    remote, local = support.lm.build(**kwargs), lm.build(**kwargs)
    inputs = checks.describe_inputs(prompt=prompt, max_new_tokens=k) + \
        ", a model whose largest logit is token 0's at every step"
    got = common.expect_tensor(getattr(student.causal, NAME)(remote, prompt, k), f"{NAME}(model, prompt, {k})")
    want = ref.greedy_generate(local, prompt, k)
    if got.dim() == 2 and got.shape[0] == want.shape[0] and prompt.shape[1] <= got.shape[1] < want.shape[1] \
            and torch.equal(got.long(), want[:, :got.shape[1]]):
        short_loop = mistakes.name_generation_mistake(got, mistakes.greedy(local, prompt, k))   # k − 1 steps, an EOS check
        checks.fail(f"{NAME}(model, prompt, {k}): expected shape {tuple(want.shape)}, got {tuple(got.shape)}: "
                    f"generation stopped after {got.shape[1] - prompt.shape[1]} new token(s) (inputs: {inputs})",
                    short_loop or Ex4Cause.GEN_STOPPED_EARLY)
    checks.expect_shape(got, tuple(want.shape), f"{NAME}(model, prompt, {k})", inputs)
    if not torch.equal(got.long(), want):
        checks.fail(f"{NAME}(model, prompt, {k}): {int((got.long() != want).sum())} of {want.numel()} tokens "
                    f"differ from greedy decoding (inputs: {inputs})")


@pytest.mark.points(0.5)
@pytest.mark.covers("greedy_generate")
@pytest.mark.contract("greedy_generate/result")
@pytest.mark.covers("greedy_generate:args/max_new_tokens = 0")
def test_generate_zero_new_tokens(student, support):
    """greedy_generate with max_new_tokens = 0 returns the prompt"""
    _check(student, support, 5, _prompt(5, 2, 3), 0)
