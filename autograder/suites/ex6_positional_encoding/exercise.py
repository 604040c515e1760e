"""ex6 · Positional encodings (opt-in), as data: the registry row, the contract's sentences its
tests cite, its coverage rows and ``check``'s note (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import (COVERED, NA, NO_TENSOR_INPUT, RULES, Exercise, Row, Sentence, plain, plot_fn,
                                 torch_fn)

EXERCISE = Exercise(
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
    contract=(
        Sentence("positions", "Positions count from 0; tables are `(max_len, d_model)`, row `p` the encoding "
                              "of position `p`."),
        Sentence("general-conventions", "The general conventions above hold (dtype and device kept, "
                                        "differentiable, inputs unchanged)."),
        Sentence("sinusoidal_encoding/signature",
                 "`(max_len, d_model, dtype=torch.float32, device=None) -> Tensor`"),
        Sentence("sinusoidal_encoding/formula",
                 "`PE[p, 2i] = sin(p / 10000^(2i / d_model))`, `PE[p, 2i+1] = cos(p / 10000^(2i / d_model))` "
                 "(interleaved, sine first)"),
        Sentence("sinusoidal_encoding/odd-width", "odd `d_model`: the last column is the sine of its pair"),
        Sentence("sinusoidal_encoding/table",
                 "`(max_len, d_model)` of `dtype` on `device`, as accurate as `dtype` allows"),
        Sentence("LearnedPositionalEmbedding/init", "`nn.Module`, `__init__(self, max_len, d_model)`"),
        Sentence("LearnedPositionalEmbedding/structure", "exactly one submodule `pos = nn.Embedding(max_len, d_model)`"),
        Sentence("LearnedPositionalEmbedding/forward", "`forward(x (B, n, d_model)) = x + pos(arange(n))`"),
        Sentence("LearnedPositionalEmbedding/raises", "raises `ValueError` when `n > max_len`"),
        Sentence("add_positional_encoding/signature", "`(x (..., n, d_model), pe (L, d_model)) -> Tensor`"),
        Sentence("add_positional_encoding/sum",
                 "`x + pe[:n]` broadcast over leading dims, with `x`'s shape, dtype and device (`pe` converted)"),
        Sentence("add_positional_encoding/raises", "raises `ValueError` when `n > L`"),
        Sentence("make_copy_task/signature",
                 "`(num_samples, seq_len, vocab_size, position, seed) -> (tokens, labels)`"),
        Sentence("make_copy_task/recipe",
                 "`g = torch.Generator().manual_seed(seed)`; `tokens = torch.randint(0, vocab_size, "
                 "(num_samples, seq_len), generator=g)`; `labels = tokens[:, position]` (a copy)"),
        Sentence("extrapolation_experiment",
                 "the procedure in the stub's docstring with the given `CopyModel`, `SinusoidalPositions`, "
                 "`fit`, `accuracy`: keys `sinusoidal_train`, `sinusoidal_long`, `learned_train`, "
                 "`learned_long` (accuracies in [0, 1]; `None` where the model cannot take length 2n)"),
        Sentence("plot_encoding/signature", "`(pe, ax=None, title=None) -> matplotlib.figure.Figure`"),
        Sentence("plot_encoding/heatmap",
                 "a heatmap of `pe (max_len, d_model)` (tensor, possibly requiring grad, or array): row `p` "
                 "from the top, column `j` from the left"),
        Sentence("plot_encoding/labels", 'x label contains "dimension", y label "position"'),
        Sentence("plot_encoding/clim", "colour limits −1 and 1"),
        Sentence("plot_encoding/colorbar", "a colorbar"),
        Sentence("plot_encoding/title", "title set when given"),
        Sentence("plot_encoding/returns", "returns the figure drawn into"),
        Sentence("banned", "Not allowed: `torch.nn.MultiheadAttention`, "
                           "`torch.nn.functional.scaled_dot_product_attention`."),
    ),
    rows=(
        Row("sinusoidal_encoding", {**{r: NO_TENSOR_INPUT for r in RULES if r.startswith("inputs/")},
                                    "dtype/float32": COVERED, "dtype/float64": COVERED, "device": COVERED,
                                    "grad": NA("a constant table of sines and cosines"), "banned": COVERED,
                                    "args/odd d_model": COVERED, "size/max_len = 1": COVERED}),
        plain("LearnedPositionalEmbedding.__init__", structure=COVERED),
        torch_fn("LearnedPositionalEmbedding.forward", raises=COVERED, **{"size/one position": COVERED}),
        torch_fn("add_positional_encoding", raises=COVERED,
                 **{"lead/0, 1, several": COVERED, "size/one position": COVERED}),
        plain("make_copy_task", **{"args/position": COVERED}),
        plain("extrapolation_experiment", structure=COVERED,
              **{f"args/{name}": COVERED for name in ("seed", "steps", "train_len", "vocab_size", "d_model", "position")}),
        plot_fn("plot_encoding", **{"args/ax": COVERED}),
    ),
)
