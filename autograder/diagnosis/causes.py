"""Every mistake the kit can name, as an identity: ``Cause`` (a stable id and the sentence the
student reads), and ``Several`` for mistakes a test cannot tell apart.

A failing test names at most one diagnosis: a ``Cause``, or ``Several`` causes when the test's
inputs give the same result for each of them (the student is told all of them, joined by
"or"; the kit never picks one). ``checks.fail(message, cause)`` writes the sentence on the
message's ``Likely cause:`` line and the ids into the result's ``extra_data.cause`` (a list),
which the gradebook counts and the hint measure (``bench/hint_measure.py``) checks against
each corpus bug's label.

Ids are ``<area>.<name>``: ``general`` for mistakes of any exercise (exceptions, dtypes,
devices, shapes), ``exN`` for one exercise's. An id never changes meaning; a sentence may be
reworded.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Union


class Cause(Enum):
    """A known mistake: ``Cause("ex1.no_scale")`` by id; ``.sentence`` is what the student reads."""

    def __new__(cls, cause_id: str, sentence: str) -> "Cause":
        member = object.__new__(cls)
        member._value_ = cause_id
        member.sentence = sentence
        return member

    @property
    def id(self) -> str:
        return self.value

    # ------------------------------------------------------------------ any exercise
    NUMPY_OF_GRAD_TENSOR = (
        "general.numpy_of_grad_tensor",
        "a tensor that requires grad is turned into a NumPy array: call .detach() first "
        "(weights.detach().cpu().numpy())")
    VIEW_AFTER_TRANSPOSE = (
        "general.view_after_transpose",
        ".view(...) on a tensor made non-contiguous by transpose: use .reshape(...) or "
        ".contiguous().view(...)")
    DTYPE_MIX = (
        "general.dtype_mix",
        "a tensor of another dtype enters the computation (e.g. torch.tensor(…) or a mask created in "
        "float64 next to float32 inputs): create new tensors with dtype=x.dtype, or use Python floats")
    MASK_NOT_BOOL = (
        "general.mask_not_bool",
        "the mask is built as a number tensor (torch.ones(n, n) without dtype=torch.bool, a "
        "float tril, or 0/1 or 0/-inf values): masks are torch.bool, True = may attend")
    IN_PLACE = (
        "general.in_place",
        "an in-place operation on an input (x -= m, Q /= √d_k, masked_fill_, x[...] = …, or "
        "writing through .numpy() / np.asarray(x), which share the tensor's memory): work on "
        "new arrays/tensors, e.g. x = x - m")
    IN_PLACE_NEEDED_BY_AUTOGRAD = (
        "general.in_place_needed_by_autograd",
        "an in-place operation on a tensor autograd still needs: use the out-of-place form "
        "(masked_fill, not masked_fill_; x = x + y, not x += y)")
    SIGNATURE_MISSING_PARAMETER = (
        "general.signature_missing_parameter",
        "the function's signature lacks a parameter of the docstring (named in the error above): "
        "add it, with its default")
    SIGNATURE_TOO_FEW_PARAMETERS = (
        "general.signature_too_few_parameters",
        "the function's signature has fewer parameters than the docstring: compare it with the stub")
    RETURNS_ONE_VALUE = (
        "general.returns_one_value",
        "your function returns a single array or tensor where its docstring asks for a tuple: "
        "return all of them, e.g. `return output, weights`")
    FLOAT64_ENTERS = (
        "general.float64_enters",
        "a float64 value enters the computation (torch.tensor(…, dtype=torch.float64), "
        ".double(), a NumPy float64 array, or torch.tensor(math.sqrt(d_k)) made in float64): "
        "compute in the input's dtype, e.g. divide by math.sqrt(d_k), a Python float")
    CAST_TO_FLOAT32 = (
        "general.cast_to_float32",
        "the computation is cast to float32 (.float(), .to(torch.float32), dtype=torch.float32, "
        "or a new tensor made with torch.tensor(…)/torch.ones(…) in the default dtype): keep "
        "the input's dtype (dtype=x.dtype), float64 inputs give float64 results")
    TENSOR_ON_DEFAULT_DEVICE = (
        "general.tensor_on_default_device",
        "a tensor is created on the default device (torch.ones(n, n), torch.zeros(...), torch.arange(n), "
        "torch.tril(torch.ones(...)), torch.tensor(...)) without device=x.device: create new "
        "tensors on the input's device (device=x.device) or derive them from the input")
    FILL_VALUE_TENSOR = (
        "general.fill_value_tensor",
        "a fill value given as a tensor made on the CPU (masked_fill(mask, torch.tensor(-1e9))): "
        "give it as a Python float, masked_fill(~mask, float('-inf'))")
    VALUE_READ_OUT = (
        "general.value_read_out",
        "a value is read out of a tensor on the computation path (.item(), .numpy(), .tolist(), "
        "float(...), bool(...), `if tensor...`): torch functions must work on any device with "
        "torch operations only")
    RESULT_ON_CPU = (
        "general.result_on_cpu",
        "the result is moved or created on the CPU (.cpu(), torch.tensor(...), torch.from_numpy(...)): "
        "keep it on the input's device")
    DETACHED = (
        "general.detached",
        "a .detach(), .data, .numpy(), .item(), torch.tensor(…) of a tensor or torch.no_grad() on the way "
        "from the inputs to the result cuts it off from autograd")
    BANNED_API = (
        "general.banned_api",
        "a library function this exercise bans (a built-in attention, softmax or mask helper) where "
        "the exercise asks for your own code")
    ASSERT_FOR_VALUE_ERROR = (
        "general.assert_for_value_error",
        "use `raise ValueError(...)`, not assert (asserts can be switched off)")
    BATCHED_DOT_T = (
        "general.batched_dot_t",
        ".T on an array or tensor with more than two axes reverses ALL of them: swap only the last "
        "two (np.swapaxes(K, -1, -2), K.transpose(-2, -1) or K.mT)")
    SQUEEZE_ALL = (
        "general.squeeze_all",
        "squeeze() without a dim removes every axis of size 1, the batch axis too when B = 1: "
        "squeeze only the axis you mean (squeeze(0), squeeze(-1)) or index it (h_n[-1])")
    CONSTANT_FACTOR = (
        "general.constant_factor",
        "your result is the expected one times a constant factor: a factor is missing or extra "
        "(a scaling such as 1/√d_k, a sum where a mean is due, a count such as the batch size)")
    MASK_EXTRA_AXIS = (
        "general.mask_extra_axis",
        "the mask is given an axis it does not need (mask.unsqueeze(…)): the documented masks already "
        "broadcast to the scores' shape, use them as they are (masked_fill and torch.where broadcast)")
    MASK_INDEXING = (
        "general.mask_indexing",
        "scores[~mask] = … (boolean indexing) needs a mask of exactly the scores' shape, but masks only "
        "broadcast to it: use scores.masked_fill(~mask, float('-inf')) or torch.where / np.where")

    # ------------------------------------------------------------------ ex1
    EX1_NO_SCALE = (
        "ex1.no_scale",
        "your result matches attention *without* the 1/√d_k scaling: divide the scores "
        "Q Kᵀ by √d_k, with d_k = Q.shape[-1]")
    EX1_SCALE_DV = (
        "ex1.scale_dv",
        "your result matches attention scaled by √d_v instead of √d_k: d_k is the size of "
        "the queries and keys (Q.shape[-1]), not of the values")
    EX1_SCALE_NO_SQRT = (
        "ex1.scale_no_sqrt",
        "your result matches attention scaled by 1/d_k instead of 1/√d_k: take the square root")
    EX1_SCALE_M = (
        "ex1.scale_m",
        "your result matches attention scaled by the number of keys instead of √d_k: "
        "d_k is Q.shape[-1], the feature size")
    EX1_WRONG_AXIS = (
        "ex1.wrong_axis",
        "your weights are normalised over the queries (axis -2) instead of over the keys "
        "(the last axis): each row of weights, one per query, must sum to 1")
    EX1_INVERTED_MASK = (
        "ex1.inverted_mask",
        "your result matches attention with the mask inverted: in this course `True` "
        "means *may attend*, so fill the scores where the mask is False")
    EX1_MASK_AFTER = (
        "ex1.mask_after",
        "your result matches applying the mask *after* the softmax (zeroing weights without "
        "renormalising): fill the masked scores with -inf (or -1e9) *before* the softmax")
    EX1_MASK_IGNORED = (
        "ex1.mask_ignored",
        "your result matches attention with the mask ignored: masked keys must get weight 0")
    EX1_MASK_ZERO = (
        "ex1.mask_zero",
        "your result matches setting masked scores to 0 (e.g. scores * mask): a score of 0 "
        "still gets weight; fill masked scores with -inf or -1e9 instead")
    EX1_TRANSPOSED = (
        "ex1.transposed",
        "your weights look transposed: weights[..., i, j] is how much query i attends to key j")
    EX1_OUTPUT_IS_WEIGHTS_T = (
        "ex1.output_is_weights_t",
        "your output matches weightsᵀ @ V: the output is weights @ V, shape (..., n, d_v)")
    EX1_SOFTMAX_LAST_AXIS = (
        "ex1.softmax_last_axis",
        "your softmax normalises over the last axis whatever `axis` says: use the "
        "`axis` argument in the max and in the sum")
    EX1_SOFTMAX_GLOBAL = (
        "ex1.softmax_global",
        "your softmax normalises over the whole array: sum along `axis` with "
        "keepdims=True so that each slice sums to 1")
    EX1_SOFTMAX_SUM_LAST = (
        "ex1.softmax_sum_last",
        "your softmax sums over the last axis whatever `axis` says: use axis=axis in the "
        "sum (and in the max), with keepdims=True")
    EX1_SOFTMAX_NO_SHIFT = (
        "ex1.softmax_no_shift",
        "exp overflows for large entries: subtract each slice's max along `axis` "
        "(keepdims=True) before np.exp; softmax does not change under that shift")
    EX1_SOFTMAX_GLOBAL_MAX = (
        "ex1.softmax_global_max",
        "you subtract the max of the whole array: slices far below it underflow to 0/0; "
        "subtract each slice's own max along `axis` (keepdims=True)")
    EX1_BACK_NO_ROWSUM = (
        "ex1.back_no_rowsum",
        "your dQ/dK miss the second term of the softmax backward: with the Jacobian "
        "diag(p) − p pᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P))")
    EX1_BACK_NO_SCALE = (
        "ex1.back_no_scale",
        "your dQ/dK miss the 1/√d_k factor: the scores were scaled in the forward pass")
    EX1_BACK_MASK_IGNORED = (
        "ex1.back_mask_ignored",
        "your gradients ignore the mask: recompute the forward weights with the same "
        "mask (masked weights are 0, so they pass no gradient)")
    EX1_BACK_DV_NOT_T = (
        "ex1.back_dv_not_t",
        "dV is computed without transposing the weights: dV = Pᵀ @ d_output "
        "(np.swapaxes(P, -1, -2) @ d_output), shape (..., m, d_v)")
    EX1_BACK_DK_NOT_T = (
        "ex1.back_dk_not_t",
        "dK is computed without transposing dS: dK = dSᵀ @ Q / √d_k (np.swapaxes(dS, -1, -2) @ Q), "
        "shape (..., m, d_k)")
    EX1_BACK_DQ_USES_V = (
        "ex1.back_dq_uses_v",
        "your dQ matches dS @ V: the scores are Q Kᵀ, so dQ = dS @ K / √d_k")
    EX1_NG_FORWARD = (
        "ex1.ng_forward",
        "your gradient matches forward differences (f(x+eps·e_i) − f(x)) / eps: use central "
        "differences (f(x+eps·e_i) − f(x−eps·e_i)) / (2·eps)")
    EX1_NG_BACKWARD = (
        "ex1.ng_backward",
        "your gradient matches backward differences (f(x) − f(x−eps·e_i)) / eps: use central "
        "differences (f(x+eps·e_i) − f(x−eps·e_i)) / (2·eps)")
    EX1_NG_HALF = (
        "ex1.ng_half",
        "your gradient is twice the central difference: divide by 2·eps, not by eps")
    EX1_NG_PRECEDENCE = (
        "ex1.ng_precedence",
        "your gradient matches (f(x+eps·e_i) − f(x−eps·e_i)) / 2 * eps: Python reads that as "
        "((…) / 2) * eps; write / (2 * eps)")
    EX1_NG_IGNORES_EPS = (
        "ex1.ng_ignores_eps",
        "your gradient matches the default step 1e-6: use the `eps` argument you are given")

    # ------------------------------------------------------------------ ex2
    EX2_HEATMAP_TRANSPOSED = (
        "ex2.heatmap_transposed",
        "your heatmap is transposed: queries must be rows (top to bottom) and keys "
        "columns (left to right), i.e. draw weights, not weights.T")
    EX2_ROWS_FLIPPED = (
        "ex2.rows_flipped",
        "the rows are upside down: query 0 must be the TOP row. With imshow keep the "
        "default origin='upper' (origin='lower' puts row 0 at the bottom); with "
        "pcolormesh call ax.invert_yaxis()")
    EX2_COLUMNS_MIRRORED = (
        "ex2.columns_mirrored",
        "the columns are mirrored: key 0 must be the LEFTMOST column (do not invert the x axis)")
    EX2_ROTATED = (
        "ex2.rotated",
        "the heatmap is upside down and mirrored (rotated by 180°): query 0 belongs in the top "
        "row and key 0 in the left column")
    EX2_TRANSPOSED_FLIPPED = (
        "ex2.transposed_flipped",
        "your heatmap is transposed AND upside down: queries are rows counted from the top, "
        "keys columns counted from the left")
    EX2_TRANSPOSED_MIRRORED = (
        "ex2.transposed_mirrored",
        "your heatmap is transposed and mirrored: queries are rows counted from the top, keys "
        "columns counted from the left")
    EX2_QUERY_LABELS_BOTTOM_UP = (
        "ex2.query_labels_bottom_up",
        "the query labels run bottom-to-top: query 0 must be labelled at the TOP "
        "(origin='lower' without inverting the y axis?)")
    EX2_KEY_LABELS_RIGHT_TO_LEFT = (
        "ex2.key_labels_right_to_left",
        "the key labels run right-to-left: key 0 must be labelled at the LEFT")
    EX2_TOKENS_SWAPPED = (
        "ex2.tokens_swapped",
        "the token lists are swapped: query tokens label the y axis (rows) and key "
        "tokens the x axis (columns)")
    EX2_EXTRA_TICKS = (
        "ex2.extra_ticks",
        "there are extra, unlabelled ticks: set exactly one tick per token, at the "
        "cell centres (ax.set_xticks(range(m)) / ax.set_yticks(range(n)))")
    EX2_TICKS_SHIFTED = (
        "ex2.ticks_shifted",
        "the labels are shifted by one tick: set the tick positions first "
        "(set_xticks(range(m))) and then the labels, one per token")
    EX2_TICKS_MISSING = (
        "ex2.ticks_missing",
        "some tokens have no tick: set one tick per token (matplotlib's automatic "
        "ticks skip some)")
    EX2_TICKS_UNLABELLED = (
        "ex2.ticks_unlabelled",
        "the ticks have no labels: label them with the tokens")
    EX2_NO_COLORBAR = (
        "ex2.no_colorbar",
        "no fig.colorbar(image, ax=ax) call for the heatmap")
    EX2_TITLE_NONE_SHOWN = (
        "ex2.title_none_shown",
        "ax.set_title(title) is called even when title is None")
    EX2_DEFAULT_TITLE = (
        "ex2.default_title",
        "a default title where the docstring says \"left unset when None\"")
    EX2_AXIS_LABELS_SWAPPED = (
        "ex2.axis_labels_swapped",
        "the labels are swapped (keys are columns, along x)")
    EX2_NO_COLOUR_LIMITS = (
        "ex2.no_colour_limits",
        "without vmin/vmax matplotlib scales the colours to each "
        "matrix's own min and max, so heatmaps of different heads cannot be compared")
    EX2_CMAP_IGNORED = (
        "ex2.cmap_ignored",
        "the cmap argument is not passed on to imshow / pcolormesh (cmap=cmap)")
    EX2_GIVEN_AX_IGNORED = (
        "ex2.given_ax_ignored",
        "plotting with plt.imshow / a new figure instead of the given ax (ax.imshow(...))")
    EX2_GRID_SWAPPED = (
        "ex2.grid_swapped",
        "rows and columns are swapped in plt.subplots(nrows, ncols)")
    EX2_GRID_NCOLS_NOT_CAPPED = (
        "ex2.grid_ncols_not_capped",
        "the grid size ignores that ncols is at most h (use min(h, ncols) columns and ceil(h / ncols) rows)")
    EX2_HEADS_FROM_ZERO = (
        "ex2.heads_from_zero",
        "heads are numbered from 1 in titles (\"Head 1\" is head 0)")
    EX2_HEADS_COLUMN_MAJOR = (
        "ex2.heads_column_major",
        "the heads fill the grid column by column: head i belongs in row i // ncols, column "
        "i % ncols (axes.flat is row-major)")
    EX2_HEADS_NO_COLORBAR = (
        "ex2.heads_no_colorbar",
        "no fig.colorbar(...) call for the heads' heatmaps")
    EX2_SPARE_CELLS_SHOWN = (
        "ex2.spare_cells_shown",
        "the grid's spare cells are left visible: hide every axes without a head (ax.set_visible(False) "
        "or ax.axis('off'))")
    EX2_NO_SUPTITLE = (
        "ex2.no_suptitle",
        "fig.suptitle(title) is missing (a title on one axes is not the figure's suptitle)")
    EX2_PLT_SHOW = (
        "ex2.plt_show",
        "plt.show() inside the plotting function (the docstring says: no plt.show())")
    EX2_TOP_INDICES = (
        "ex2.top_indices",
        "return the tokens key_tokens[j], not the indices j")
    EX2_TOP_SMALLEST = (
        "ex2.top_smallest",
        "you return the keys with the SMALLEST weights: sort in decreasing order "
        "(largest weight first)")
    EX2_TOP_TIES_HIGH = (
        "ex2.top_ties_high",
        "ties go to the higher key index in your code: among equal weights the key that comes "
        "first in key_tokens must come first (use a stable sort of -weights, or "
        "np.argsort(-row, kind='stable'))")
    EX2_TOP_INCREASING = (
        "ex2.top_increasing",
        "the right keys, but in increasing order of weight: list the largest first")
    EX2_TIES_TOPK = (
        "ex2.ties_topk",
        "ties are ordered by torch.topk, which does not put the lower key index first; among equal "
        "weights the key that comes first in key_tokens must come first: use a stable sort of the "
        "negated weights (np.argsort(-row, kind='stable'), torch.sort(-row, stable=True)) or "
        "sorted(range(m), key=lambda j: -row[j])")
    EX2_TIES_ARGSORT_DESCENDING = (
        "ex2.ties_argsort_descending",
        "ties are ordered by torch.argsort(…, descending=True), which does not put the lower key index "
        "first; among equal weights the key that comes first in key_tokens must come first: use a "
        "stable sort of the negated weights (np.argsort(-row, kind='stable'), torch.sort(-row, "
        "stable=True)) or sorted(range(m), key=lambda j: -row[j])")
    EX2_TIES_QUICKSORT = (
        "ex2.ties_quicksort",
        "ties are ordered by np.argsort(-weights) (its default quicksort is not stable), which does not "
        "put the lower key index first; among equal weights the key that comes first in key_tokens "
        "must come first: use a stable sort of the negated weights (np.argsort(-row, kind='stable'), "
        "torch.sort(-row, stable=True)) or sorted(range(m), key=lambda j: -row[j])")

    # ------------------------------------------------------------------ ex3
    EX3_SPLIT_NO_TRANSPOSE = (
        "ex3.split_no_transpose",
        "split_heads reshapes straight to (B, h, n, d_head): that cuts the "
        "sequence, not the features, into heads. Reshape to (B, n, h, d_head) "
        "and then transpose(1, 2)")
    EX3_COMBINE_NO_TRANSPOSE = (
        "ex3.combine_no_transpose",
        "combine_heads reshapes (B, h, n, d_head) straight to (B, n, d_model) "
        "without transposing back: transpose(1, 2) to (B, n, h, d_head) first, "
        "then reshape (use .contiguous() or .reshape)")
    EX3_SCALE_D_MODEL = (
        "ex3.scale_d_model",
        "the scores are scaled by √d_model; in multi-head attention each head's "
        "dot products have d_head = d_model // h terms, so divide by √d_head")
    EX3_NO_SCALE = (
        "ex3.no_scale",
        "the scores are not scaled: divide q kᵀ by √d_head before the softmax")
    EX3_NO_W_O = (
        "ex3.no_w_o",
        "the output projection W_o is missing: output = W_o(combine_heads(heads))")
    EX3_MASK_INVERTED = (
        "ex3.mask_inverted",
        "the mask is inverted: True means \"may attend\", so fill the scores where "
        "the mask is False (masked_fill(~mask, -inf))")
    EX3_SOFTMAX_AXIS = (
        "ex3.softmax_axis",
        "the softmax runs over the wrong axis: each query's weights over the keys "
        "must sum to 1 (softmax over the last axis, dim=-1)")
    EX3_MASK_MULTIPLIED = (
        "ex3.mask_multiplied",
        "the mask multiplies the scores, which makes masked scores 0 (still attended to), "
        "not -inf: use scores.masked_fill(~mask, float('-inf')) (or -1e9)")
    EX3_INTERLEAVED = (
        "ex3.interleaved",
        "the heads take every h-th feature instead of a contiguous block: head i owns "
        "features i·d_head … (i+1)·d_head − 1 (reshape to (B, n, h, d_head))")
    EX3_MASK_AFTER = (
        "ex3.mask_after",
        "the mask is applied after the softmax (zeroing weights): mask the scores "
        "before the softmax so each row still sums to 1")
    EX3_KV_SWAPPED = (
        "ex3.kv_swapped",
        "the keys are projected from `value` and the values from `key`: k = W_k(key), "
        "v = W_v(value)")
    EX3_V_WITH_W_K = (
        "ex3.v_with_w_k",
        "the values are projected with W_k: v = W_v(value)")
    EX3_V_FROM_KEY = (
        "ex3.v_from_key",
        "the value projection is applied to the key tensor: v = W_v(value), not W_v(key) "
        "(in cross-attention the keys and the values are different inputs)")
    EX3_K_FROM_VALUE = (
        "ex3.k_from_value",
        "the key projection is applied to the value tensor: k = W_k(key), not W_k(value)")
    EX3_K_WITH_W_Q = (
        "ex3.k_with_w_q",
        "the keys are projected with W_q: k = W_k(key)")
    EX3_KV_FROM_QUERY = (
        "ex3.kv_from_query",
        "the keys and values are computed from `query` (self-attention only): in "
        "cross-attention k = W_k(key) and v = W_v(value)")
    EX3_WEIGHTS_AVERAGED = (
        "ex3.weights_averaged",
        "the returned weights are averaged over the heads: return the per-head weights, "
        "shape (B, h, n, m), as the docstring asks")
    EX3_WEIGHTS_HEADS_MISSING = (
        "ex3.weights_heads_missing",
        "the returned weights have no head axis: return the per-head weights "
        "(B, h, n, m), not an average, sum or a single head")
    EX3_BIAS_IGNORED = (
        "ex3.bias_ignored",
        "the bias argument is not passed on to every nn.Linear (bias=bias)")
    EX3_NO_DIVISIBILITY_CHECK = (
        "ex3.no_divisibility_check",
        "no check of d_model % num_heads in __init__: raise ValueError when it is not 0")
    EX3_PARAMETERS_WITHOUT_GRADIENT = (
        "ex3.parameters_without_gradient",
        "something on the path from the parameters to the output is detached (.detach(), .item(), "
        ".numpy(), torch.tensor(...) of an intermediate), or a projection is not used")

    # ------------------------------------------------------------------ ex4
    EX4_STRICT = (
        "ex4.strict",
        "your mask hides the diagonal too (like tril(…, diagonal=-1)): position i may attend "
        "to itself, mask[i, j] = (j <= i)")
    EX4_INVERTED = (
        "ex4.inverted",
        "your result matches a causal mask that is inverted (upper-triangular): in this course "
        "`True` means *may attend*, and position i may attend to positions j <= i")
    EX4_BLOCKS_TRUE = (
        "ex4.blocks_true",
        "your result matches treating `True` in the causal mask as *blocked*: in this course "
        "`True` means may attend, so fill the scores where the mask is False")
    EX4_NO_MASK = (
        "ex4.no_mask",
        "your result matches attention with no causal mask: position i must not see positions j > i")
    EX4_MASK_AFTER = (
        "ex4.mask_after",
        "your result matches masking *after* the softmax (zeroing without renormalising): fill "
        "the scores above the diagonal with -inf (or -1e9) *before* the softmax")
    EX4_MASK_ZERO = (
        "ex4.mask_zero",
        "your result matches setting future scores to 0 (e.g. scores * mask): a score of 0 still "
        "gets weight; fill with -inf or -1e9")
    EX4_NO_SCALE = (
        "ex4.no_scale",
        "your result matches attention without the 1/√d_k scaling (d_k = W_q.shape[-1])")
    EX4_SCALE_D_MODEL = (
        "ex4.scale_d_model",
        "your result matches scaling by √d_model instead of √d_k: d_k is the projected size, W_q.shape[-1]")
    EX4_WRONG_AXIS = (
        "ex4.wrong_axis",
        "your weights are normalised over the queries (dim -2) instead of over the keys (the last dim)")
    EX4_FULLY_MASKED_ROW = (
        "ex4.fully_masked_row",
        "a query row with every key masked gives NaN weights: check which entries your mask allows")
    EX4_FUTURE_LEAKS = (
        "ex4.future_leaks",
        "the causal mask is missing, inverted or applied after the softmax")
    EX4_MASK_UPPER_TRIANGULAR = (
        "ex4.mask_upper_triangular",
        "your mask is upper-triangular: True means *may attend*, and position i may attend to "
        "positions j <= i (on and below the diagonal)")
    EX4_MASK_MARKS_FUTURE = (
        "ex4.mask_marks_future",
        "your mask marks the *future* as True: in this course True means may attend, so it is True "
        "on and below the diagonal")
    EX4_PADDING_LESS_EQUAL = (
        "ex4.padding_less_equal",
        "your mask is True at positions <= lengths[b]: sequence b has lengths[b] real tokens, "
        "at positions 0 … lengths[b]−1")
    EX4_PADDING_INVERTED = (
        "ex4.padding_inverted",
        "your mask is inverted: True marks the *real* tokens (the keys one may attend to), "
        "False the padding")
    EX4_PADDING_WIDTH = (
        "ex4.padding_width",
        "the mask's width comes from the data (lengths.max()) instead of the max_len argument: "
        "make it (B, max_len), e.g. torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]")
    EX4_COMBINE_PADS_QUERIES = (
        "ex4.combine_pads_queries",
        "your mask applies the padding to the *queries* (padding[b, i]); it masks keys: "
        "[b, i, j] = causal[i, j] and padding[b, j]")
    EX4_COMBINE_OR = (
        "ex4.combine_or",
        "your mask combines with `or`: a position may be attended only if *both* masks allow it")
    EX4_DEVICE_ARGUMENT_UNUSED = (
        "ex4.device_argument_unused",
        "the device argument is not used: create the mask on it, e.g. "
        "torch.ones(n, n, dtype=torch.bool, device=device).tril()")
    EX4_NEXT_NO_SCALE = (
        "ex4.next_no_scale",
        "your result matches attend_next without the 1/√d_k scaling")
    EX4_NEXT_BATCH_SOFTMAX = (
        "ex4.next_batch_softmax",
        "your weights are normalised over the batch (dim 0) instead of over the t "
        "cached positions (the last dim)")
    EX4_NEXT_LAST_ONLY = (
        "ex4.next_last_only",
        "your output matches the newest cached value alone: the new query attends to "
        "all t cached positions")
    EX4_NEXT_FIRST_ONLY = (
        "ex4.next_first_only",
        "your output matches the first cached value alone: the new query attends to "
        "all t cached positions")
    EX4_NEXT_SKIPS_NEWEST = (
        "ex4.next_skips_newest",
        "you attend to the first t−1 cached positions only: the cache "
        "already holds the newest position, which attends to itself")
    EX4_GEN_FIRST_POSITION = (
        "ex4.gen_first_position",
        "your tokens match using the logits of the *first* position: the next token comes "
        "from the last position, logits[:, -1, :]")
    EX4_GEN_NO_PROMPT = (
        "ex4.gen_no_prompt",
        "your result holds only the new tokens: it must start with the prompt, (B, t + max_new_tokens)")
    EX4_GEN_LAST_TOKEN = (
        "ex4.gen_last_token",
        "your tokens match feeding the model only the newest token: call the model on the "
        "whole sequence so far at each step")
    EX4_GEN_ONCE = (
        "ex4.gen_once",
        "your tokens match computing the logits once, from the prompt only: call the model again "
        "on the extended sequence at every step")
    EX4_GEN_HIGHEST_TIE = (
        "ex4.gen_highest_tie",
        "your tokens match picking the *highest* index among tied logits: on ties the "
        "lowest token index wins (what torch.argmax does)")
    EX4_GEN_TIES_NOT_LOWEST = (
        "ex4.gen_ties_not_lowest",
        "on ties the lowest token index must win: torch.argmax does that; topk, sort and "
        "argsort do not promise it")
    EX4_GEN_TOO_FEW_TOKENS = (
        "ex4.gen_too_few_tokens",
        "your result has fewer new tokens than max_new_tokens: the loop must run max_new_tokens times "
        "(for _ in range(max_new_tokens))")
    EX4_GEN_INT64_APPENDED = (
        "ex4.gen_int64_appended",
        "the generated ids (int64 from argmax) appended without casting them to the prompt's dtype")
    EX4_GEN_PROMPT_RETURNED = (
        "ex4.gen_prompt_returned",
        "the prompt returned as it is when there is nothing to generate (use prompt.clone())")
    EX4_GEN_NO_NO_GRAD = (
        "ex4.gen_no_no_grad",
        "no torch.no_grad() around the generation loop")

    # ------------------------------------------------------------------ ex5
    EX5_FIRST_POSITION = (
        "ex5.first_position",
        "you classify from the attention output at the first position; the task "
        "reads the answer at the LAST position (a[:, -1]), which must look back "
        "to position 0")
    EX5_FIRST_POSITION_UNSCALED = (
        "ex5.first_position_unscaled",
        "you classify from the attention output at the first position (the task reads the answer "
        "at the LAST position, a[:, -1]) and the scores are not divided by √d_model")
    EX5_NO_SCALING = (
        "ex5.no_scaling",
        "the attention scores are not divided by √d_model: use "
        "softmax(q kᵀ / √d) with d = x.shape[-1]")
    EX5_SCALE_BY_D = (
        "ex5.scale_by_d",
        "the scores are divided by d_model instead of √d_model")
    EX5_WRONG_SOFTMAX_AXIS = (
        "ex5.wrong_softmax_axis",
        "the softmax runs over the queries (dim=-2); each query's weights "
        "must sum to 1 over the keys (dim=-1)")
    EX5_NO_POSITIONS = (
        "ex5.no_positions",
        "the positional embeddings are missing: embed_inputs must return "
        "embed(tokens) + pos(arange(n)), otherwise attention cannot tell where "
        "the first token is")
    EX5_MEAN_POOL = (
        "ex5.mean_pool",
        "you average the attention output over all positions; the spec classifies "
        "from the last position only")
    EX5_NO_VALUE = (
        "ex5.no_value",
        "the attention weights multiply x itself; they must multiply v = W_v(x)")
    EX5_LSTM_FIRST = (
        "ex5.lstm_first",
        "you classify from the LSTM output at position 0 (output[:, 0]); use the final "
        "hidden state h_n, i.e. the state after the last position")
    EX5_LSTM_MEAN = (
        "ex5.lstm_mean",
        "you average the LSTM outputs over time; use the final hidden state h_n "
        "(the state after the last position)")
    EX5_LSTM_CELL = (
        "ex5.lstm_cell",
        "you classify from the cell state c_n; use the hidden state h_n")
    EX5_LSTM_NOT_BATCH_FIRST = (
        "ex5.lstm_not_batch_first",
        "nn.LSTM(...) without batch_first=True")
    EX5_EXTRA_W_O = (
        "ex5.extra_w_o",
        "an output projection W_o, as in multi-head attention: the spec's AttentionClassifier "
        "has none (its head reads the attention output directly)")
    EX5_SUBMODULES_RENAMED = (
        "ex5.submodules_renamed",
        "submodules named differently from the spec: use the spec's attribute names")
    EX5_LOSS_AFTER_UPDATE = (
        "ex5.loss_after_update",
        "your losses are shifted by one step: each is measured after the "
        "optimiser step. Record the loss computed before optimizer.step()")
    EX5_NO_ZERO_GRAD = (
        "ex5.no_zero_grad",
        "gradients accumulate across steps: call optimizer.zero_grad() at the "
        "start of every step")
    EX5_ZERO_GRAD_BEFORE_STEP = (
        "ex5.zero_grad_before_step",
        "the loss never changes: the gradients are zeroed between backward() "
        "and optimizer.step(); zero them at the start of each step instead")
    EX5_IGNORED_LR = (
        "ex5.ignored_lr",
        "the losses match lr=1e-2 whatever lr is passed: give the lr argument to "
        "torch.optim.Adam")
    EX5_SGD = (
        "ex5.sgd",
        "the losses match SGD, not Adam: use torch.optim.Adam(model.parameters(), lr=lr)")
    EX5_DEFAULT_LR = (
        "ex5.default_lr",
        "the losses match Adam's default learning rate (1e-3); pass lr=lr to "
        "torch.optim.Adam")
    EX5_LOSS_TENSOR_RECORDED = (
        "ex5.loss_tensor_recorded",
        "the loss tensor itself is recorded: append loss.item()")
    EX5_GRAD_SUM_BATCH = (
        "ex5.grad_sum_batch",
        "you sum the per-sample gradient norms over the batch; take the mean")
    EX5_GRAD_SQUARED = (
        "ex5.grad_squared",
        "you use the squared L2 norm; take the L2 norm itself (torch.linalg.norm / .norm())")
    EX5_GRAD_OF_LOSS = (
        "ex5.grad_of_loss",
        "you differentiate the cross-entropy loss; the spec differentiates "
        "sum_b classify(E)[b, labels[b]], the correct-class logit")
    EX5_GRAD_OF_LOSS_SUMMED = (
        "ex5.grad_of_loss_summed",
        "you differentiate the cross-entropy loss (the spec differentiates sum_b classify(E)[b, "
        "labels[b]], the correct-class logit) and sum the norms over the batch (take the mean)")
    EX5_GRAD_ALL_LOGITS = (
        "ex5.grad_all_logits",
        "you differentiate the sum of all logits; take only each sample's "
        "correct-class logit, logits[b, labels[b]]")
    EX5_GRAD_NORM_OF_MEAN = (
        "ex5.grad_norm_of_mean",
        "you take the norm of the batch-mean gradient; take each sample's norm "
        "first, then the mean over the batch")
    EX5_GRAD_BACKWARD_FILLS_GRADS = (
        "ex5.grad_backward_fills_grads",
        "loss.backward() fills every parameter's .grad: use torch.autograd.grad(loss, E) instead")
    EX5_GRAD_ZERO_GRAD_INSIDE = (
        "ex5.grad_zero_grad_inside",
        "model.zero_grad() or .backward() inside input_gradient_norms: take the gradient with "
        "torch.autograd.grad(loss, E) and leave .grad alone")
    EX5_PATH_OFF_BY_ONE = (
        "ex5.path_off_by_one",
        "an off-by-one in path_length: an LSTM takes seq_len − 1 recurrent steps from position 0 "
        "to the last position")
    EX5_PATH_CASE_INSENSITIVE = (
        "ex5.path_case_insensitive",
        "kind compared case-insensitively (or an unknown kind not refused)")
    EX5_ACCURACY_TENSOR = (
        "ex5.accuracy_tensor",
        "the result is a tensor: return a Python float with .item()")
    EX5_ACCURACY_PERCENT = (
        "ex5.accuracy_percent",
        "accuracy is returned as a percentage (× 100) or a count, not a fraction")
    EX5_ACCURACY_NO_NO_GRAD = (
        "ex5.accuracy_no_no_grad",
        "no torch.no_grad() around the model's forward pass in accuracy")
    EX5_TOKENS_FROM_ZERO = (
        "ex5.tokens_from_zero",
        "tokens drawn from 0 (token 0 is reserved): use torch.randint(1, vocab_size, …)")
    EX5_LABELS_VIEW = (
        "ex5.labels_view",
        "labels = tokens[:, 0] is a view of tokens: return tokens[:, 0].clone()")
    EX5_LABELS_LAST = (
        "ex5.labels_last",
        "the labels are the LAST token of each sequence (tokens[:, -1]); the task is to recall "
        "the FIRST one: labels = tokens[:, 0].clone()")
    EX5_LABELS_SECOND = (
        "ex5.labels_second",
        "the labels are tokens[:, 1]: the task recalls the first token, tokens[:, 0] (indices start at 0)")
    EX5_LABELS_SHAPE = (
        "ex5.labels_shape",
        "the labels keep a sequence axis (tokens[:, :1] or tokens[:, [0]]): take tokens[:, 0], "
        "shape (num_samples,)")

    # ------------------------------------------------------------------ ex6
    EX6_SWAPPED = (
        "ex6.swapped",
        "your table matches cos in the even columns and sin in the odd ones: PE[p, 2i] is the "
        "sine and PE[p, 2i+1] the cosine")
    EX6_NOT_INTERLEAVED = (
        "ex6.not_interleaved",
        "your table matches all the sines first, then all the cosines (torch.cat of two "
        "halves): the columns interleave, sine in column 2i, cosine in column 2i+1")
    EX6_EXPONENT_I = (
        "ex6.exponent_i",
        "your table matches 10000^(i/d_model) with the pair index i: the exponent is "
        "2i/d_model (with 2i the even column index, e.g. torch.arange(0, d_model, 2))")
    EX6_EXPONENT_COLUMN = (
        "ex6.exponent_column",
        "your table matches 10000^(j/d_model) with j the column itself: both columns of a "
        "pair share one frequency, so the cosine in column 2i+1 also uses 2i/d_model")
    EX6_FROM_ONE = (
        "ex6.from_one",
        "your table matches positions counted from 1: the first row is position 0, [0, 1, 0, 1, …]")
    EX6_MULTIPLIED = (
        "ex6.multiplied",
        "your table matches p · 10000^(2i/d_model): the position is *divided* by "
        "10000^(2i/d_model) (the frequencies fall from 1 towards 1/10000)")
    EX6_INTEGER_DIVISION = (
        "ex6.integer_division",
        "your table matches an exponent computed with integer division (2*i // d_model is "
        "0): every pair gets frequency 1; divide as floats")
    EX6_ODD_LAST_ZERO = (
        "ex6.odd_last_zero",
        "for an odd d_model your last column is 0: it is the sine of the last pair, "
        "sin(p / 10000^((d_model−1)/d_model)), with no cosine after it")
    EX6_ODD_LAST_COS = (
        "ex6.odd_last_cos",
        "for an odd d_model your last column matches a cosine: column d_model−1 is even, so it "
        "is the sine of its pair")
    EX6_IN_FLOAT32 = (
        "ex6.in_float32",
        "your float64 table matches the float32 one: compute in the requested dtype (or in "
        "float64 and cast), not in float32 and then convert")
    EX6_LEARNED_FROM_ONE = (
        "ex6.learned_from_one",
        "your result matches adding pos(1 … n) instead of pos(0 … n−1): positions start at 0")
    EX6_LEARNED_ONLY_POS = (
        "ex6.learned_only_pos",
        "your result matches pos(arange(n)) alone: forward adds the position vectors to x")
    EX6_LEARNED_WHOLE = (
        "ex6.learned_whole",
        "your result matches adding the whole table's first rows in another order: row t goes to position t")
    EX6_ADD_REVERSED = (
        "ex6.add_reversed",
        "your result matches adding pe's *last* n rows: position t gets row t, pe[:n]")
    EX6_ADD_ONLY_PE = (
        "ex6.add_only_pe",
        "your result matches pe[:n] alone: add_positional_encoding adds the rows to x")
    EX6_INDEX_ERROR_NOT_VALUE_ERROR = (
        "ex6.index_error_not_value_error",
        "an IndexError from indexing past the end of the table (nn.Embedding or pe[...]) "
        "instead of your own check: raise ValueError when n is too long")
    EX6_NO_LENGTH_CHECK = (
        "ex6.no_length_check",
        "no length check: raise ValueError when the sequence is longer than the table")
    EX6_NOT_ONLY_SIN_COS = (
        "ex6.not_only_sin_cos",
        "something is added or multiplied after the sin/cos (e.g. the position itself, "
        "or a scale): the table holds the sines and cosines alone")
    EX6_PLOT_TRANSPOSED = (
        "ex6.plot_transposed",
        "the table is transposed: positions are the rows, dimensions the columns")
    EX6_PLOT_UPSIDE_DOWN = (
        "ex6.plot_upside_down",
        "an upside-down image (origin='lower' or pcolormesh without inverting the y axis): "
        "position 0 is the top row")
    EX6_PLOT_AUTOMATIC_LIMITS = (
        "ex6.plot_automatic_limits",
        "automatic colour limits: pass vmin=-1, vmax=1")
    EX6_COPY_TOKENS_FROM_ONE = (
        "ex6.copy_tokens_from_one",
        "tokens drawn from [1, vocab_size): this task uses every token, torch.randint(0, vocab_size, …)")
    EX6_COPY_LABELS_SHIFTED = (
        "ex6.copy_labels_shifted",
        "labels taken from position + 1: positions count from 0, labels = tokens[:, position]")
    EX6_LEARNED_TABLE_TOO_LONG = (
        "ex6.learned_table_too_long",
        "the learned model was built with a max_len larger than the training length, or the "
        "positions are cut or wrapped instead of raising ValueError")
    EX6_EXPERIMENT_NOT_AS_SPECIFIED = (
        "ex6.experiment_not_as_specified",
        "the training or test sets differ from the docstring's (sizes, seeds, position), "
        "the model is not trained with fit(…, steps), or the positions are not added")
    EX6_EXPERIMENT_NOT_TRAINED = (
        "ex6.experiment_not_trained",
        "the accuracies do not come from training and testing the models (constants, or `steps` "
        "ignored)")


@dataclass(frozen=True)
class Several:
    """Causes a test cannot tell apart (its inputs give each the same result): the student is
    told every one of them ("A, or: B"), never one picked arbitrarily. At least two, distinct."""
    causes: tuple[Cause, ...]

    def __post_init__(self) -> None:
        if len(self.causes) < 2 or len(set(self.causes)) != len(self.causes):
            raise ValueError("Several needs two or more distinct causes")


Diagnosis = Union[Cause, Several]


def diagnosis_of(causes: Iterable[Cause]) -> Diagnosis | None:
    """One cause, ``Several`` (duplicates dropped, order kept), or None for none."""
    unique = tuple(dict.fromkeys(causes))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else Several(unique)


def members(diagnosis: Diagnosis | None) -> tuple[Cause, ...]:
    if diagnosis is None:
        return ()
    return diagnosis.causes if isinstance(diagnosis, Several) else (diagnosis,)


def ids(diagnosis: Diagnosis | None) -> list[str]:
    """What ``extra_data.cause`` holds: the causes' ids (one, or several the test cannot tell apart)."""
    return [c.id for c in members(diagnosis)]


def text(diagnosis: Diagnosis | None) -> str:
    """The student's ``Likely cause:`` text: ``"A\\n  or: B"`` for several ("" for none)."""
    return "\n  or: ".join(c.sentence for c in members(diagnosis))


def text_of_ids(cause_ids: "Iterable[str]") -> str:
    """The ``Likely cause:`` text of a result's ``extra_data.cause`` ids (an unknown id as itself)."""
    known = {c.id: c.sentence for c in Cause}
    return "\n  or: ".join(known.get(i, i) for i in cause_ids)
