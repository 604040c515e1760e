"""The mistakes of this exercise the kit can name (ids ``ex4.<name>``): see
:mod:`autograder.diagnosis.causes` for what a cause is and how a failing test names one."""
from __future__ import annotations

from autograder.diagnosis.causes import Cause


class Ex4Cause(Cause):
    """A mistake of ex4: ``Ex4Cause.<NAME>.sentence`` is what the student reads."""

    STRICT = (
        "ex4.strict",
        "your mask hides the diagonal too (like tril(…, diagonal=-1)): position i may attend "
        "to itself, mask[i, j] = (j <= i)")
    INVERTED = (
        "ex4.inverted",
        "your result matches a causal mask that is inverted (upper-triangular): in this course "
        "`True` means *may attend*, and position i may attend to positions j <= i")
    BLOCKS_TRUE = (
        "ex4.blocks_true",
        "your result matches treating `True` in the causal mask as *blocked*: in this course "
        "`True` means may attend, so fill the scores where the mask is False")
    NO_MASK = (
        "ex4.no_mask",
        "your result matches attention with no causal mask: position i must not see positions j > i")
    MASK_AFTER = (
        "ex4.mask_after",
        "your result matches masking *after* the softmax (zeroing without renormalising): fill "
        "the scores above the diagonal with -inf (or -1e9) *before* the softmax")
    MASK_ZERO = (
        "ex4.mask_zero",
        "your result matches setting future scores to 0 (e.g. scores * mask): a score of 0 still "
        "gets weight; fill with -inf or -1e9")
    NO_SCALE = (
        "ex4.no_scale",
        "your result matches attention without the 1/√d_k scaling (d_k = W_q.shape[-1])")
    SCALE_D_MODEL = (
        "ex4.scale_d_model",
        "your result matches scaling by √d_model instead of √d_k: d_k is the projected size, W_q.shape[-1]")
    WRONG_AXIS = (
        "ex4.wrong_axis",
        "your weights are normalised over the queries (dim -2) instead of over the keys (the last dim)")
    FULLY_MASKED_ROW = (
        "ex4.fully_masked_row",
        "a query row with every key masked gives NaN weights: check which entries your mask allows")
    FUTURE_LEAKS = (
        "ex4.future_leaks",
        "the causal mask is missing, inverted or applied after the softmax")
    MASK_UPPER_TRIANGULAR = (
        "ex4.mask_upper_triangular",
        "your mask is upper-triangular: True means *may attend*, and position i may attend to "
        "positions j <= i (on and below the diagonal)")
    MASK_MARKS_FUTURE = (
        "ex4.mask_marks_future",
        "your mask marks the *future* as True: in this course True means may attend, so it is True "
        "on and below the diagonal")
    PADDING_LESS_EQUAL = (
        "ex4.padding_less_equal",
        "your mask is True at positions <= lengths[b]: sequence b has lengths[b] real tokens, "
        "at positions 0 … lengths[b]−1")
    PADDING_INVERTED = (
        "ex4.padding_inverted",
        "your mask is inverted: True marks the *real* tokens (the keys one may attend to), "
        "False the padding")
    PADDING_WIDTH = (
        "ex4.padding_width",
        "the mask's width comes from the data (lengths.max()) instead of the max_len argument: "
        "make it (B, max_len), e.g. torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]")
    COMBINE_PADS_QUERIES = (
        "ex4.combine_pads_queries",
        "your mask applies the padding to the *queries* (padding[b, i]); it masks keys: "
        "[b, i, j] = causal[i, j] and padding[b, j]")
    COMBINE_OR = (
        "ex4.combine_or",
        "your mask combines with `or`: a position may be attended only if *both* masks allow it")
    DEVICE_ARGUMENT_UNUSED = (
        "ex4.device_argument_unused",
        "the device argument is not used: create the mask on it, e.g. "
        "torch.ones(n, n, dtype=torch.bool, device=device).tril()")
    NEXT_NO_SCALE = (
        "ex4.next_no_scale",
        "your result matches attend_next without the 1/√d_k scaling")
    NEXT_BATCH_SOFTMAX = (
        "ex4.next_batch_softmax",
        "your weights are normalised over the batch (dim 0) instead of over the t "
        "cached positions (the last dim)")
    NEXT_LAST_ONLY = (
        "ex4.next_last_only",
        "your result matches attending to the newest cached position alone (all the weight on "
        "key t − 1): the new query attends to all t cached positions")
    NEXT_FIRST_ONLY = (
        "ex4.next_first_only",
        "your result matches attending to the first cached position alone (all the weight on "
        "key 0, as a causal mask tril(ones(1, t)) without its offset t − 1 gives): the new query "
        "is the newest position and attends to all t cached positions")
    NEXT_SKIPS_NEWEST = (
        "ex4.next_skips_newest",
        "you attend to the first t−1 cached positions only: the cache "
        "already holds the newest position, which attends to itself")
    GEN_FIRST_POSITION = (
        "ex4.gen_first_position",
        "your tokens match using the logits of the *first* position: the next token comes "
        "from the last position, logits[:, -1, :]")
    GEN_NO_PROMPT = (
        "ex4.gen_no_prompt",
        "your result holds only the new tokens: it must start with the prompt, (B, t + max_new_tokens)")
    GEN_LAST_TOKEN = (
        "ex4.gen_last_token",
        "your tokens match feeding the model only the newest token: call the model on the "
        "whole sequence so far at each step")
    GEN_ONCE = (
        "ex4.gen_once",
        "your tokens match computing the logits once, from the prompt only: call the model again "
        "on the extended sequence at every step")
    GEN_HIGHEST_TIE = (
        "ex4.gen_highest_tie",
        "your tokens match picking the *highest* index among tied logits: on ties the "
        "lowest token index wins (what torch.argmax does)")
    GEN_TIES_NOT_LOWEST = (
        "ex4.gen_ties_not_lowest",
        "on ties the lowest token index must win: torch.argmax does that; topk, sort and "
        "argsort do not promise it")
    GEN_TOO_FEW_TOKENS = (
        "ex4.gen_too_few_tokens",
        "your result has fewer new tokens than max_new_tokens: the loop must run max_new_tokens times "
        "(for _ in range(max_new_tokens))")
    GEN_STOPPED_EARLY = (
        "ex4.gen_stopped_early",
        "generation stopped before max_new_tokens tokens (an end-of-sequence check?): append "
        "exactly max_new_tokens tokens, whatever they are")
    GEN_INT64_APPENDED = (
        "ex4.gen_int64_appended",
        "the generated ids (int64 from argmax) appended without casting them to the prompt's dtype")
    GEN_PROMPT_RETURNED = (
        "ex4.gen_prompt_returned",
        "the prompt returned as it is when there is nothing to generate (use prompt.clone())")
    GEN_NO_NO_GRAD = (
        "ex4.gen_no_no_grad",
        "no torch.no_grad() around the generation loop")
