"""The contract's coverage matrix as data: every public function and method of EXERCISES.md
(rows) and the rules of the contract that apply to it (cells).

A cell is a tuple of hidden tests that exercise it, named ``"<file>::<test function>"`` in
the exercise's suite (tests written before the matrix), to which every test with
``@pytest.mark.covers("<function>:<rule>")`` is added (``autograder.coverage``); or an
:class:`NA`, the reason the rule does not apply to that function. ``autograder.coverage``
renders the matrix (docs/COVERAGE.md) and ``tests/test_coverage_matrix.py`` fails on an
empty cell or a test that does not exist.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NA:
    """A rule that does not apply to a function, and why."""
    reason: str


Cell = "tuple[str, ...] | NA"

# the columns every function has (in this order); argument/shape/tie cells follow per row
RULES: dict[str, str] = {
    "inputs/ndarray": "input left unchanged: NumPy array",
    "inputs/tensor": "input left unchanged: tensor",
    "inputs/shared": "input left unchanged: tensor sharing memory with a NumPy array (torch.from_numpy)",
    "inputs/grad": "input left unchanged: tensor that requires grad",
    "dtype/float32": "dtype kept: float32",
    "dtype/float64": "dtype kept: float64",
    "device": "device kept (tensors on PyTorch's meta device, or the device argument)",
    "grad": "differentiable",
    "banned": "no banned API",
}
# per-row extras: prefixes of the argument, mask-shape, leading-dims and tie cells
EXTRA_PREFIXES = ("args/", "mask/", "lead/", "ties", "raises", "structure", "rules/")


@dataclass(frozen=True)
class Row:
    exercise: str
    name: str                                   # contract name, or "Class.method"
    cells: dict[str, object] = field(default_factory=dict)


T = ()                                           # covered by covers markers only (new tests)
NUMPY_FN = NA("a NumPy function: it takes NumPy arrays, not tensors")
NUMPY_DTYPE = NA("NumPy functions may compute and return float64 whatever the input's float type")
NUMPY_DEVICE = NA("NumPy arrays have no device")
NUMPY_GRAD = NA("NumPy: no autograd (the gradient is hand-written or numerical)")
TENSORS_ONLY = NA("takes tensors, not NumPy arrays")
NO_FLOAT_INPUT = NA("its tensor inputs are integer or bool tensors, which cannot require grad")
NO_TENSOR_INPUT = NA("takes no array or tensor")
BOOL_RESULT = NA("returns a torch.bool mask: no float dtype to keep")
NOT_DIFFERENTIABLE = NA("its result is not differentiable (booleans, integers, Python values)")
EX2_BANS = NA("ex2 bans no API")
EX5_BANS = NA("the spec bans attention APIs in AttentionClassifier only")
PLOT_DTYPE = NA("returns a drawing or token strings, not a tensor")
PLOT_DEVICE = NA("a plot or a ranking needs the values (on the CPU); a meta tensor has none")


def numpy_fn(ex: str, name: str, unchanged: str, banned: str, **extra: object) -> Row:
    return Row(ex, name, {"inputs/ndarray": (unchanged,), "inputs/tensor": NUMPY_FN,
                          "inputs/shared": NUMPY_FN, "inputs/grad": NUMPY_FN,
                          "dtype/float32": NUMPY_DTYPE, "dtype/float64": NUMPY_DTYPE,
                          "device": NUMPY_DEVICE, "grad": NUMPY_GRAD, "banned": (banned,), **extra})


def torch_fn(ex: str, name: str, *, unchanged=T, f32=T, f64=T, device=T, grad=T, banned=T,
             inputs_grad=T, **extra: object) -> Row:
    return Row(ex, name, {"inputs/ndarray": TENSORS_ONLY, "inputs/tensor": unchanged, "inputs/shared": T,
                          "inputs/grad": inputs_grad, "dtype/float32": f32, "dtype/float64": f64,
                          "device": device, "grad": grad, "banned": banned, **extra})


def plot_fn(ex: str, name: str, **extra: object) -> Row:
    return Row(ex, name, {"inputs/ndarray": T, "inputs/tensor": T, "inputs/shared": T, "inputs/grad": T,
                          "dtype/float32": PLOT_DTYPE, "dtype/float64": PLOT_DTYPE, "device": PLOT_DEVICE,
                          "grad": NA("returns a drawing or token strings"), "banned": EX2_BANS, **extra})


def plain(ex: str, name: str, banned: object, **extra: object) -> Row:
    """A function or constructor of Python values (ints, strings): only its arguments apply."""
    return Row(ex, name, {**{rule: NO_TENSOR_INPUT for rule in RULES}, "banned": banned, **extra})


def _t(*tests: str) -> tuple[str, ...]:
    return tests


EX1_BAN = "test_rules.py::test_no_banned_apis"
EX3_BAN = "test_2_module.py::test_no_banned_apis"
EX4_BAN = "test_rules.py::test_no_banned_apis"
EX5_BAN = "test_rules.py::test_no_banned_apis"
EX6_BAN = "test_rules.py::test_no_banned_apis"

ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ ex1
    numpy_fn("ex1", "softmax", "test_softmax.py::test_softmax_leaves_input_unchanged", EX1_BAN,
             **{"args/axis": _t("test_softmax.py::test_softmax_along_axis")}),
    numpy_fn("ex1", "scaled_dot_product_attention_np", "test_forward_np.py::test_np_leaves_inputs_unchanged",
             EX1_BAN, **{"mask/(n, m)": _t("test_forward_np.py::test_np_mask_broadcast_over_batch"),
                         "mask/(B, 1, m)": _t("test_forward_np.py::test_np_mask_per_batch_keys"),
                         "mask/(B, n, m)": _t("test_forward_np.py::test_np_mask_per_batch_keys"),
                         "mask/(m,)": T,
                         "lead/0": _t("test_forward_np.py::test_np_unbatched_values"),
                         "lead/1": _t("test_forward_np.py::test_np_batched_values"),
                         "lead/several": _t("test_forward_np.py::test_np_extra_leading_dims")}),
    numpy_fn("ex1", "attention_backward_np", "test_backward_np.py::test_backward_leaves_inputs_unchanged",
             EX1_BAN, **{"mask/(n, m)": _t("test_backward_np.py::test_backward_masked"),
                         "mask/(B, 1, m)": T, "mask/(B, n, m)": T, "mask/(m,)": T,
                         "lead/0": _t("test_backward_np.py::test_backward_unbatched"),
                         "lead/1": _t("test_backward_np.py::test_backward_masked"),
                         "lead/several": _t("test_backward_np.py::test_backward_batched")}),
    numpy_fn("ex1", "numerical_gradient", "test_numerical_gradient.py::test_numerical_gradient_leaves_x_unchanged",
             EX1_BAN, **{"args/eps": _t("test_numerical_gradient.py::test_numerical_gradient_uses_eps"),
                         "args/x of any shape": _t("test_numerical_gradient.py::test_numerical_gradient_any_shape")}),
    torch_fn("ex1", "scaled_dot_product_attention",
             unchanged=_t("test_torch.py::test_torch_leaves_inputs_unchanged"),
             f32=_t("test_torch.py::test_torch_values_and_dtype"), f64=_t("test_torch.py::test_torch_values_and_dtype"),
             grad=_t("test_torch.py::test_torch_differentiable"), banned=_t(EX1_BAN),
             **{"mask/(n, m)": _t("test_torch.py::test_torch_masks"), "mask/(B, 1, m)": _t("test_torch.py::test_torch_masks"),
                "mask/(B, n, m)": T, "mask/(m,)": T,
                "lead/0": _t("test_torch.py::test_torch_unbatched_and_leading_dims"),
                "lead/1": _t("test_torch.py::test_torch_values_and_dtype"),
                "lead/several": _t("test_torch.py::test_torch_unbatched_and_leading_dims")}),
    # ------------------------------------------------------------------ ex2
    plot_fn("ex2", "plot_attention", **{"args/ax": _t("test_1_plot_attention.py::test_draws_into_given_ax"),
                                        "args/title": _t("test_1_plot_attention.py::test_title"),
                                        "args/cmap": _t("test_1_plot_attention.py::test_cmap"),
                                        "rules/no plt.show()": T}),
    plot_fn("ex2", "plot_attention_heads",
            **{"args/ncols < h": _t("test_2_plot_attention_heads.py::test_grid_shape"),
               "args/ncols > h": _t("test_2_plot_attention_heads.py::test_fewer_heads_than_columns"),
               "args/title": _t("test_2_plot_attention_heads.py::test_suptitle"),
               "rules/no plt.show()": T}),
    plot_fn("ex2", "top_attended", **{"args/k = 1": _t("test_3_top_attended.py::test_top1"),
                                      "args/k > 1": _t("test_3_top_attended.py::test_topk_order"),
                                      "ties": _t("test_3_top_attended.py::test_ties")}),
    # ------------------------------------------------------------------ ex3
    torch_fn("ex3", "split_heads", f64=_t("test_1_split_combine.py::test_float64_and_differentiable"),
             grad=_t("test_1_split_combine.py::test_float64_and_differentiable"), banned=_t(EX3_BAN),
             **{"args/num_heads": _t("test_1_split_combine.py::test_split_features")}),
    torch_fn("ex3", "combine_heads", f64=_t("test_1_split_combine.py::test_float64_and_differentiable"),
             grad=_t("test_1_split_combine.py::test_float64_and_differentiable"), banned=_t(EX3_BAN)),
    plain("ex3", "MultiHeadAttention.__init__", _t(EX3_BAN),
          **{"args/bias": _t("test_2_module.py::test_parameters_without_bias"),
             "raises": _t("test_2_module.py::test_value_error"),
             "structure": _t("test_2_module.py::test_parameters")}),
    torch_fn("ex3", "MultiHeadAttention.forward", f32=_t("test_3_forward.py::test_shapes"),
             f64=_t("test_3_forward.py::test_float64"),
             grad=_t("test_4_gradients.py::test_gradients_reach_every_parameter"), banned=_t(EX3_BAN),
             **{"mask/(n, m)": _t("test_3_forward.py::test_mask_query_key"),
                "mask/(B, 1, 1, m)": _t("test_3_forward.py::test_mask_padding"),
                "mask/(B, 1, n, m)": _t("test_3_forward.py::test_mask_per_batch"),
                "mask/(B, h, n, m)": T,
                "args/bias=False": _t("test_3_forward.py::test_without_bias")}),
    # ------------------------------------------------------------------ ex4
    Row("ex4", "create_causal_mask", {**{r: NO_TENSOR_INPUT for r in RULES if r.startswith("inputs/")},
                                      "dtype/float32": BOOL_RESULT, "dtype/float64": BOOL_RESULT,
                                      "device": T, "grad": NOT_DIFFERENTIABLE, "banned": _t(EX4_BAN),
                                      "args/device": _t("test_masks.py::test_causal_mask_device_argument")}),
    torch_fn("ex4", "create_padding_mask", inputs_grad=NO_FLOAT_INPUT, f32=BOOL_RESULT, f64=BOOL_RESULT,
             device=NA("the mask depends on the values in lengths (a loop over lengths[b] is allowed), so it "
                       "cannot run on meta tensors; the spec asks for lengths' device, which every test's "
                       "CPU result satisfies"),
             grad=NOT_DIFFERENTIABLE, banned=_t(EX4_BAN), **{"args/max_len > max(lengths)": T}),
    torch_fn("ex4", "combine_masks", unchanged=_t("test_masks.py::test_combine_masks"), inputs_grad=NO_FLOAT_INPUT,
             f32=BOOL_RESULT, f64=BOOL_RESULT, grad=NOT_DIFFERENTIABLE, banned=_t(EX4_BAN)),
    torch_fn("ex4", "causal_self_attention",
             unchanged=_t("test_causal_attention.py::test_causal_attention_leaves_inputs_unchanged"),
             f32=_t("test_causal_attention.py::test_causal_attention_float32"),
             f64=_t("test_causal_attention.py::test_causal_attention_values"),
             grad=_t("test_causal_attention.py::test_causal_attention_differentiable"), banned=_t(EX4_BAN),
             **{"lead/1": _t("test_causal_attention.py::test_causal_attention_single_position")}),
    torch_fn("ex4", "attend_next", unchanged=_t("test_decoding.py::test_attend_next_differentiable_and_inputs_kept"),
             f32=_t("test_decoding.py::test_attend_next_float32_and_single_entry_cache"),
             f64=_t("test_decoding.py::test_attend_next_values"),
             grad=_t("test_decoding.py::test_attend_next_differentiable_and_inputs_kept"), banned=_t(EX4_BAN)),
    torch_fn("ex4", "greedy_generate", unchanged=_t("test_generate.py::test_generate_single_row_and_prompt_kept"),
             inputs_grad=NO_FLOAT_INPUT,
             f32=NA("token ids: the result keeps the prompt's integer dtype (test_generate_keeps_prompt_shape_dtype)"),
             f64=NA("token ids: the result keeps the prompt's integer dtype (test_generate_keeps_prompt_shape_dtype)"),
             device=NA("generation reads the argmax values (.tolist(), int(...) are allowed: nothing is "
                       "differentiated), so it cannot run on meta tensors"),
             grad=NOT_DIFFERENTIABLE, banned=_t(EX4_BAN),
             **{"args/max_new_tokens = 0": _t("test_generate.py::test_generate_zero_new_tokens"),
                "ties": _t("test_generate.py::test_generate_ties_lowest_index"),
                "rules/an int32 prompt's dtype kept": T, "rules/a copy for 0 new tokens": T,
                "rules/model run without gradients": T}),
    # ------------------------------------------------------------------ ex5
    plain("ex5", "make_recall_dataset", EX5_BANS,
          **{"args/num_samples, seq_len, vocab_size, seed": _t("test_dataset.py::test_dataset_exact")}),
    plain("ex5", "LSTMClassifier.__init__", EX5_BANS, **{"structure": _t("test_models.py::test_lstm_structure")}),
    torch_fn("ex5", "LSTMClassifier.embed_inputs", inputs_grad=NO_FLOAT_INPUT,
             f32=NA("integer tokens in; the embedding's dtype out (see classify)"),
             f64=NA("integer tokens in; the embedding's dtype out (see classify)"),
             grad=NA("integer tokens: nothing to differentiate"), banned=EX5_BANS),
    torch_fn("ex5", "LSTMClassifier.classify", f32=_t("test_models.py::test_lstm_values"),
             grad=_t("test_gradients.py::test_gradient_norms_of_classifiers"), banned=EX5_BANS),
    torch_fn("ex5", "LSTMClassifier.forward", inputs_grad=NO_FLOAT_INPUT,
             f32=NA("integer tokens in (classify keeps the dtype)"), f64=NA("integer tokens in (classify keeps the dtype)"),
             grad=NA("integer tokens: differentiated through classify"), banned=EX5_BANS),
    plain("ex5", "AttentionClassifier.__init__", _t(EX5_BAN),
          **{"structure": _t("test_models.py::test_attention_structure"),
             "args/max_len > n": _t("test_models.py::test_attention_embed_inputs")}),
    torch_fn("ex5", "AttentionClassifier.embed_inputs", inputs_grad=NO_FLOAT_INPUT,
             f32=NA("integer tokens in; the embedding's dtype out (see classify)"),
             f64=NA("integer tokens in; the embedding's dtype out (see classify)"),
             grad=NA("integer tokens: nothing to differentiate"), banned=_t(EX5_BAN)),
    torch_fn("ex5", "AttentionClassifier.classify", f32=_t("test_models.py::test_attention_classify"),
             grad=_t("test_gradients.py::test_gradient_norms_of_classifiers"), banned=_t(EX5_BAN)),
    torch_fn("ex5", "AttentionClassifier.forward", inputs_grad=NO_FLOAT_INPUT,
             f32=NA("integer tokens in (classify keeps the dtype)"), f64=NA("integer tokens in (classify keeps the dtype)"),
             grad=NA("integer tokens: differentiated through classify"), banned=_t(EX5_BAN)),
    torch_fn("ex5", "input_gradient_norms", inputs_grad=NO_FLOAT_INPUT,
             f32=NA("returns norms in the model's dtype; judged on the kit's float32 model"),
             f64=NA("returns norms in the model's dtype; judged on the kit's float32 model"),
             device=NA("differentiates the model: device is kept by the classifiers' methods it calls "
                       "(their device cells); the spec does not ask this helper to run on meta"),
             grad=NA("takes gradients itself; its result is a statistic"), banned=EX5_BANS),
    plain("ex5", "path_length", EX5_BANS, **{"args/kind, seq_len": _t("test_training.py::test_path_length"),
                                            "raises": T}),
    torch_fn("ex5", "train", inputs_grad=NO_FLOAT_INPUT, f32=NA("returns Python floats"),
             f64=NA("returns Python floats"), device=NA("returns Python floats: it reads the loss values (.item())"),
             grad=NA("trains the model; returns Python floats"), banned=EX5_BANS,
             **{"args/lr": _t("test_training.py::test_train_losses"),
                "args/steps = 0": _t("test_training.py::test_train_default_lr_and_zero_steps")}),
    torch_fn("ex5", "accuracy", inputs_grad=NO_FLOAT_INPUT, f32=NA("returns a Python float"),
             f64=NA("returns a Python float"), device=NA("returns a Python float: it reads the values"),
             grad=NA("computed without gradients, returns a Python float"), banned=EX5_BANS,
             **{"rules/model run without gradients": T}),
    # ------------------------------------------------------------------ ex6 (opt-in)
    Row("ex6", "sinusoidal_encoding", {**{r: NO_TENSOR_INPUT for r in RULES if r.startswith("inputs/")},
                                       "dtype/float32": _t("test_sinusoidal.py::test_values_float32"),
                                       "dtype/float64": _t("test_sinusoidal.py::test_values_float64"),
                                       "device": T, "grad": NA("a constant table of sines and cosines"),
                                       "banned": _t(EX6_BAN),
                                       "args/odd d_model": _t("test_sinusoidal.py::test_values_odd_width")}),
    plain("ex6", "LearnedPositionalEmbedding.__init__", _t(EX6_BAN),
          **{"structure": _t("test_learned.py::test_structure")}),
    torch_fn("ex6", "LearnedPositionalEmbedding.forward", unchanged=_t("test_learned.py::test_input_unchanged"),
             f32=_t("test_learned.py::test_forward_values"), f64=_t("test_learned.py::test_float64"),
             grad=_t("test_learned.py::test_gradients"), banned=_t(EX6_BAN),
             **{"raises": _t("test_learned.py::test_too_long")}),
    torch_fn("ex6", "add_positional_encoding", unchanged=_t("test_add.py::test_inputs_unchanged"),
             f32=_t("test_add.py::test_values"), f64=_t("test_add.py::test_dtype"),
             grad=_t("test_add.py::test_gradients"), banned=_t(EX6_BAN),
             **{"raises": _t("test_add.py::test_too_long"), "lead/0, 1, several": _t("test_add.py::test_values")}),
    plain("ex6", "make_copy_task", _t(EX6_BAN), **{"args/position": _t("test_experiment.py::test_copy_task")}),
    plain("ex6", "extrapolation_experiment", _t(EX6_BAN),
          **{"args/seed": _t("test_experiment.py::test_experiment_result"),
             "structure": _t("test_experiment.py::test_experiment_learned_cannot_extrapolate")}),
    Row("ex6", "plot_encoding", {**plot_fn("ex6", "plot_encoding").cells, "banned": _t(EX6_BAN),
                                 "inputs/ndarray": NA("takes the encoding table as a tensor (sinusoidal_encoding's)"),
                                 "args/ax": _t("test_plot.py::test_draws_into_given_axes")}),
)
