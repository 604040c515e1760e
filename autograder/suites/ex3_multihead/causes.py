"""The mistakes of this exercise the kit can name (ids ``ex3.<name>``): see
:mod:`autograder.diagnosis.causes` for what a cause is and how a failing test names one."""
from __future__ import annotations

from autograder.diagnosis.causes import Cause


class Ex3Cause(Cause):
    """A mistake of ex3: ``Ex3Cause.<NAME>.sentence`` is what the student reads."""

    SPLIT_NO_TRANSPOSE = (
        "ex3.split_no_transpose",
        "split_heads reshapes straight to (B, h, n, d_head): that cuts the "
        "sequence, not the features, into heads. Reshape to (B, n, h, d_head) "
        "and then transpose(1, 2)")
    COMBINE_NO_TRANSPOSE = (
        "ex3.combine_no_transpose",
        "combine_heads reshapes (B, h, n, d_head) straight to (B, n, d_model) "
        "without transposing back: transpose(1, 2) to (B, n, h, d_head) first, "
        "then reshape (use .contiguous() or .reshape)")
    SCALE_D_MODEL = (
        "ex3.scale_d_model",
        "the scores are scaled by √d_model; in multi-head attention each head's "
        "dot products have d_head = d_model // h terms, so divide by √d_head")
    NO_SCALE = (
        "ex3.no_scale",
        "the scores are not scaled: divide q kᵀ by √d_head before the softmax")
    NO_W_O = (
        "ex3.no_w_o",
        "the output projection W_o is missing: output = W_o(combine_heads(heads))")
    MASK_INVERTED = (
        "ex3.mask_inverted",
        "the mask is inverted: True means \"may attend\", so fill the scores where "
        "the mask is False (masked_fill(~mask, -inf))")
    SOFTMAX_AXIS = (
        "ex3.softmax_axis",
        "the softmax runs over the wrong axis: each query's weights over the keys "
        "must sum to 1 (softmax over the last axis, dim=-1)")
    MASK_MULTIPLIED = (
        "ex3.mask_multiplied",
        "the mask multiplies the scores, which makes masked scores 0 (still attended to), "
        "not -inf: use scores.masked_fill(~mask, float('-inf')) (or -1e9)")
    INTERLEAVED = (
        "ex3.interleaved",
        "the heads take every h-th feature instead of a contiguous block: head i owns "
        "features i·d_head … (i+1)·d_head − 1 (reshape to (B, n, h, d_head))")
    MASK_AFTER = (
        "ex3.mask_after",
        "the mask is applied after the softmax (zeroing weights): mask the scores "
        "before the softmax so each row still sums to 1")
    KV_SWAPPED = (
        "ex3.kv_swapped",
        "the keys are projected from `value` and the values from `key`: k = W_k(key), "
        "v = W_v(value)")
    V_WITH_W_K = (
        "ex3.v_with_w_k",
        "the values are projected with W_k: v = W_v(value)")
    V_FROM_KEY = (
        "ex3.v_from_key",
        "the value projection is applied to the key tensor: v = W_v(value), not W_v(key) "
        "(in cross-attention the keys and the values are different inputs)")
    K_FROM_VALUE = (
        "ex3.k_from_value",
        "the key projection is applied to the value tensor: k = W_k(key), not W_k(value)")
    K_WITH_W_Q = (
        "ex3.k_with_w_q",
        "the keys are projected with W_q: k = W_k(key)")
    KV_FROM_QUERY = (
        "ex3.kv_from_query",
        "the keys and values are computed from `query` (self-attention only): in "
        "cross-attention k = W_k(key) and v = W_v(value)")
    WEIGHTS_AVERAGED = (
        "ex3.weights_averaged",
        "the returned weights are averaged over the heads: return the per-head weights, "
        "shape (B, h, n, m), as the docstring asks")
    WEIGHTS_HEADS_MISSING = (
        "ex3.weights_heads_missing",
        "the returned weights have no head axis: return the per-head weights "
        "(B, h, n, m), not an average, sum or a single head")
    BIAS_IGNORED = (
        "ex3.bias_ignored",
        "the bias argument is not passed on to every nn.Linear (bias=bias)")
    NO_DIVISIBILITY_CHECK = (
        "ex3.no_divisibility_check",
        "no check of d_model % num_heads in __init__: raise ValueError when it is not 0")
    PARAMETERS_WITHOUT_GRADIENT = (
        "ex3.parameters_without_gradient",
        "something on the path from the parameters to the output is detached (.detach(), .item(), "
        ".numpy(), torch.tensor(...) of an intermediate), or a projection is not used")
