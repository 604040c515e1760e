"""The exercises as data: what a submission must contain and what it may not use.

This mirrors the student-facing contract (EXERCISES.md in the course's spec). Everything
else in the kit (intake, release, suites, packaging) reads exercise facts from here.

``EXERCISES`` is every exercise the kit knows (the release writes all of them to
``assignments/``); ``DEFAULT`` is the assignment built, graded and exported when no
``--exercises`` is given: the exercises with ``default=True``. An exercise with
``default=False`` is opt-in (``build --exercises ex1,…,ex6``). docs/ADDING_AN_EXERCISE.md
says how to add one.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Exercise:
    id: str                      # "ex1"
    folder: str                  # folder in solutions/ and assignments/
    module: str                  # student file stem; also the reference module name
    title: str
    names: tuple[str, ...]       # every public name of the contract
    banned: tuple[str, ...] = field(default=())  # dotted API names the student may not use
    numpy_only: tuple[str, ...] = field(default=())  # functions that must not touch torch/scipy
    points: float = 20.0         # the exercise's total; tests' `points` markers are weights within it
    # What student calls of this exercise load on first use (``sandbox.worker.WARM_UPS``:
    # "meta" device probes, "figures", an "optimizer" step): loaded by the zygote before it
    # forks this exercise's worker, never on the clock of a student's call.
    warm_up: tuple[str, ...] = field(default=("meta",))
    # In the default assignment (no --exercises)? False: opt-in, built only when named.
    default: bool = True
    # What `check` tells students the hidden tests check besides the public ones (themes,
    # never tests or values); empty: check.py's own text for this id, else a generic one.
    hidden_coverage: str = ""

    @property
    def filename(self) -> str:
        return f"{self.module}.py"

    @property
    def notebook(self) -> str:
        return f"{self.module}.ipynb"


_MHA_BANS = (
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.functional.scaled_dot_product_attention",
)

# The aten operators that implement each banned API (the same computation reached through
# ``torch.ops.aten.*``, ``torch._C._nn.*``, ``torch._*`` bindings or C++): refused at the
# operator level while the student code of an exercise banning that API is on the stack
# (``sandbox/opguard.py``), and named by the static rule when spelt out in the source
# (``intake.find_banned``). Names missing from the running torch are skipped. The
# MultiheadAttention modules reach ``scaled_dot_product_attention`` too (every exercise
# banning them bans it); with ``need_weights=True`` they run only generic operators (bmm,
# softmax): the Python-level guard is then the only layer that sees them.
_SDPA_OPS = (
    "scaled_dot_product_attention", "_fused_sdp_choice",
    "_scaled_dot_product_attention_math", "_scaled_dot_product_attention_math_for_mps",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_flash_attention_forward", "_flash_attention_forward_no_dropout_inplace",
    "_efficient_attention_forward", "_cudnn_attention_forward", "_triton_scaled_dot_attention",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward",
    "_scaled_dot_product_fused_attention_overrideable_backward",
    "_flash_attention_backward", "_efficient_attention_backward", "_cudnn_attention_backward",
)
_MHA_OPS = ("_native_multi_head_attention", "_triton_multi_head_attention")
BANNED_OPERATORS: dict[str, tuple[str, ...]] = {
    "torch.nn.functional.scaled_dot_product_attention": _SDPA_OPS,
    "torch.nn.MultiheadAttention": _MHA_OPS,
    "torch.nn.functional.multi_head_attention_forward": _MHA_OPS,
    "torch.nn.TransformerEncoderLayer": ("_transformer_encoder_layer_fwd",),
    "torch.nn.TransformerEncoder": ("_transformer_encoder_layer_fwd",),
    "torch.nn.Transformer": ("_transformer_encoder_layer_fwd",),
}


def banned_operators(ex: Exercise) -> dict[str, str]:
    """``aten operator name -> the banned API it implements`` for one exercise."""
    out: dict[str, str] = {}
    for api in ex.banned:
        for op in BANNED_OPERATORS.get(api, ()):
            out.setdefault(op, api)
    return out


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        id="ex1", folder="ex1_attention", module="attention",
        title="Scaled dot-product attention",
        names=("softmax", "scaled_dot_product_attention_np", "attention_backward_np",
               "numerical_gradient", "scaled_dot_product_attention"),
        banned=("torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention"),
        numpy_only=("softmax", "scaled_dot_product_attention_np", "attention_backward_np",
                    "numerical_gradient"),
    ),
    Exercise(
        id="ex2", folder="ex2_visualization", module="visualize",
        title="Visualising attention weights",
        names=("plot_attention", "plot_attention_heads", "top_attended"),
        warm_up=("figures",),
    ),
    Exercise(
        id="ex3", folder="ex3_multihead", module="multihead",
        title="Multi-head attention",
        names=("split_heads", "combine_heads", "MultiHeadAttention"),
        banned=_MHA_BANS,
    ),
    Exercise(
        id="ex4", folder="ex4_causal_mask", module="causal",
        title="Causal masking and generation",
        names=("create_causal_mask", "create_padding_mask", "combine_masks",
               "causal_self_attention", "attend_next", "greedy_generate"),
        banned=_MHA_BANS + ("torch.nn.Transformer", "torch.nn.TransformerEncoder",
                            "torch.nn.TransformerDecoder", "torch.nn.TransformerEncoderLayer",
                            "torch.nn.TransformerDecoderLayer"),
    ),
    Exercise(
        id="ex5", folder="ex5_lstm_comparison", module="lstm_vs_attention",
        title="Attention versus an LSTM on long sequences",
        names=("make_recall_dataset", "LSTMClassifier", "AttentionClassifier",
               "input_gradient_norms", "path_length", "train", "accuracy"),
        banned=("torch.nn.MultiheadAttention", "torch.nn.functional.scaled_dot_product_attention"),
        warm_up=("meta", "optimizer"),
    ),
    Exercise(
        id="ex6", folder="ex6_positional_encoding", module="positional",
        title="Positional encodings",
        names=("sinusoidal_encoding", "LearnedPositionalEmbedding", "add_positional_encoding",
               "make_copy_task", "extrapolation_experiment", "plot_encoding"),
        banned=("torch.nn.MultiheadAttention", "torch.nn.functional.scaled_dot_product_attention"),
        warm_up=("meta", "figures", "optimizer"),
        default=False,                   # opt-in: build --exercises ex1,ex2,ex3,ex4,ex5,ex6
        hidden_coverage=(
            "the sinusoidal table against the paper's formula for other lengths and widths (odd "
            "ones too), in float32 and float64, on the requested device; values within [-1, 1] and "
            "the relative-position property (PE[p+k] is a fixed rotation of PE[p]); the learned "
            "embedding's parameters, values, gradients and length check; add_positional_encoding's "
            "broadcasting, dtype, device, gradients and untouched inputs; the copy task's exact "
            "tokens; the experiment's results; the heatmap's orientation, labels, colour limits "
            "and colorbar; the rules (attention written by hand)."),
    ),
)


def _built_points(exercises: tuple[Exercise, ...]) -> tuple[Exercise, ...]:
    """Totals from a built Gradescope zip (``build --points ex1=30``): its ``BUILD_INFO.json``.

    A checkout has no such file: ``points`` above is then the one place totals are set.
    """
    import json
    from dataclasses import replace
    from pathlib import Path

    info = Path(__file__).with_name("BUILD_INFO.json")
    if not info.is_file():
        return exercises
    points = json.loads(info.read_text(encoding="utf-8")).get("points", {})
    return tuple(replace(ex, points=float(points[ex.id])) if ex.id in points else ex
                 for ex in exercises)


EXERCISES = _built_points(EXERCISES)
DEFAULT: tuple[Exercise, ...] = tuple(ex for ex in EXERCISES if ex.default)
BY_ID: dict[str, Exercise] = {ex.id: ex for ex in EXERCISES}
BY_MODULE: dict[str, Exercise] = {ex.module: ex for ex in EXERCISES}


def select(ids: str | list[str] | None) -> tuple[Exercise, ...]:
    """Exercises named by a comma list (``"ex1,ex3"``) or list, in that order; ``DEFAULT``
    when ``None``/empty; ``"all"``: every exercise the kit knows, opt-in ones included."""
    if not ids:
        return DEFAULT
    if isinstance(ids, str):
        ids = [part.strip() for part in ids.split(",") if part.strip()]
    if list(ids) == ["all"]:
        return EXERCISES
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        raise ValueError(f"unknown exercise id(s): {', '.join(unknown)}; "
                         f"known: {', '.join(BY_ID)}")
    return tuple(BY_ID[i] for i in ids)
