"""The mistakes of this exercise the kit can name (ids ``ex1.<name>``): see
:mod:`autograder.diagnosis.causes` for what a cause is and how a failing test names one."""
from __future__ import annotations

from autograder.diagnosis.causes import Cause


class Ex1Cause(Cause):
    """A mistake of ex1: ``Ex1Cause.<NAME>.sentence`` is what the student reads."""

    NO_SCALE = (
        "ex1.no_scale",
        "your result matches attention *without* the 1/√d_k scaling: divide the scores "
        "Q Kᵀ by √d_k, with d_k = Q.shape[-1]")
    SCALE_DV = (
        "ex1.scale_dv",
        "your result matches attention scaled by √d_v instead of √d_k: d_k is the size of "
        "the queries and keys (Q.shape[-1]), not of the values")
    SCALE_NO_SQRT = (
        "ex1.scale_no_sqrt",
        "your result matches attention scaled by 1/d_k instead of 1/√d_k: take the square root")
    SCALE_M = (
        "ex1.scale_m",
        "your result matches attention scaled by the number of keys instead of √d_k: "
        "d_k is Q.shape[-1], the feature size")
    WRONG_AXIS = (
        "ex1.wrong_axis",
        "your weights are normalised over the queries (axis -2) instead of over the keys "
        "(the last axis): each row of weights, one per query, must sum to 1")
    INVERTED_MASK = (
        "ex1.inverted_mask",
        "your result matches attention with the mask inverted: in this course `True` "
        "means *may attend*, so fill the scores where the mask is False")
    MASK_AFTER = (
        "ex1.mask_after",
        "your result matches applying the mask *after* the softmax (zeroing weights without "
        "renormalising): fill the masked scores with -inf (or -1e9) *before* the softmax")
    MASK_IGNORED = (
        "ex1.mask_ignored",
        "your result matches attention with the mask ignored: masked keys must get weight 0")
    MASK_ZERO = (
        "ex1.mask_zero",
        "your result matches setting masked scores to 0 (e.g. scores * mask): a score of 0 "
        "still gets weight; fill masked scores with -inf or -1e9 instead")
    TRANSPOSED = (
        "ex1.transposed",
        "your weights look transposed: weights[..., i, j] is how much query i attends to key j")
    OUTPUT_IS_WEIGHTS_T = (
        "ex1.output_is_weights_t",
        "your output matches weightsᵀ @ V: the output is weights @ V, shape (..., n, d_v)")
    SOFTMAX_LAST_AXIS = (
        "ex1.softmax_last_axis",
        "your softmax normalises over the last axis whatever `axis` says: use the "
        "`axis` argument in the max and in the sum")
    SOFTMAX_GLOBAL = (
        "ex1.softmax_global",
        "your softmax normalises over the whole array: sum along `axis` with "
        "keepdims=True so that each slice sums to 1")
    SOFTMAX_SUM_LAST = (
        "ex1.softmax_sum_last",
        "your softmax sums over the last axis whatever `axis` says: use axis=axis in the "
        "sum (and in the max), with keepdims=True")
    SOFTMAX_NO_SHIFT = (
        "ex1.softmax_no_shift",
        "exp overflows for large entries: subtract each slice's max along `axis` "
        "(keepdims=True) before np.exp; softmax does not change under that shift")
    SOFTMAX_GLOBAL_MAX = (
        "ex1.softmax_global_max",
        "you subtract the max of the whole array: slices far below it underflow to 0/0; "
        "subtract each slice's own max along `axis` (keepdims=True)")
    BACK_NO_ROWSUM = (
        "ex1.back_no_rowsum",
        "your dQ/dK miss the second term of the softmax backward: with the Jacobian "
        "diag(p) − p pᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P))")
    BACK_NO_SCALE = (
        "ex1.back_no_scale",
        "your dQ/dK miss the 1/√d_k factor: the scores were scaled in the forward pass")
    BACK_MASK_IGNORED = (
        "ex1.back_mask_ignored",
        "your gradients ignore the mask: recompute the forward weights with the same "
        "mask (masked weights are 0, so they pass no gradient)")
    BACK_DV_NOT_T = (
        "ex1.back_dv_not_t",
        "dV is computed without transposing the weights: dV = Pᵀ @ d_output "
        "(np.swapaxes(P, -1, -2) @ d_output), shape (..., m, d_v)")
    BACK_DK_NOT_T = (
        "ex1.back_dk_not_t",
        "dK is computed without transposing dS: dK = dSᵀ @ Q / √d_k (np.swapaxes(dS, -1, -2) @ Q), "
        "shape (..., m, d_k)")
    BACK_DQ_USES_V = (
        "ex1.back_dq_uses_v",
        "your dQ matches dS @ V: the scores are Q Kᵀ, so dQ = dS @ K / √d_k")
    NG_FORWARD = (
        "ex1.ng_forward",
        "your gradient matches forward differences (f(x+eps·e_i) − f(x)) / eps: use central "
        "differences (f(x+eps·e_i) − f(x−eps·e_i)) / (2·eps)")
    NG_BACKWARD = (
        "ex1.ng_backward",
        "your gradient matches backward differences (f(x) − f(x−eps·e_i)) / eps: use central "
        "differences (f(x+eps·e_i) − f(x−eps·e_i)) / (2·eps)")
    NG_HALF = (
        "ex1.ng_half",
        "your gradient is twice the central difference: divide by 2·eps, not by eps")
    NG_PRECEDENCE = (
        "ex1.ng_precedence",
        "your gradient matches (f(x+eps·e_i) − f(x−eps·e_i)) / 2 * eps: Python reads that as "
        "((…) / 2) * eps; write / (2 * eps)")
    NG_IGNORES_EPS = (
        "ex1.ng_ignores_eps",
        "your gradient matches the default step 1e-6: use the `eps` argument you are given")


# A shape error raised on a line computing dV or dK with ``@`` and no transpose (the backward
# pass's formula needs one): read by :mod:`autograder.diagnosis.errors`.
GRADIENT_LINES = (
    (r"^\s*(d_?v|grad_?v)\w*\s*=\s*[^#]*@", Ex1Cause.BACK_DV_NOT_T),
    (r"^\s*(d_?k|grad_?k)\w*\s*=\s*[^#]*@", Ex1Cause.BACK_DK_NOT_T),
)
