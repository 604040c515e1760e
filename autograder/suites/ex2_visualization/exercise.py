"""ex2 · Visualising attention weights, as data: the registry row, the contract's sentences its
tests cite, its coverage rows and ``check``'s note (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import COVERED, NA, NO_BANS, Exercise, Sentence, plot_fn

# The contract says which kinds of weights plot_attention takes; for the other two it says
# nothing, so only NumPy arrays are graded there (a tensor is a 0-point note).
NUMPY_WEIGHTS = NA("the contract names NumPy or torch weights for plot_attention only; "
                   "this function is graded on NumPy arrays")

EXERCISE = Exercise(
    id="ex2", folder="ex2_visualization", module="visualize",
    title="Visualising attention weights",
    names=("plot_attention", "plot_attention_heads", "top_attended"),
    warm_up=("figures",),
    hidden_coverage=(
        "the heatmap's orientation, ticks, axis labels, colour limits, colorbar and title on "
        "other (non-square) weights and tokens, drawing into a given Axes, torch inputs; the "
        "head grid's layout, titles and hidden cells; top_attended's ordering and ties."),
    contract=(
        Sentence("plot_attention/signature",
                 '`(weights, query_tokens, key_tokens, ax=None, title=None, cmap="viridis") -> '
                 "matplotlib.axes.Axes`"),
        Sentence("plot_attention/weights",
                 "a heatmap of `weights (n, m)` (NumPy array or torch tensor, possibly requiring grad)"),
        Sentence("plot_attention/orientation",
                 "where query token i is row i counted from the top and key token j is column j counted "
                 "from the left"),
        Sentence("plot_attention/ticks",
                 "y tick labels are `query_tokens`, x tick labels are `key_tokens`, one tick per token"),
        Sentence("plot_attention/labels", 'x label contains "Key", y label contains "Query"'),
        Sentence("plot_attention/colorbar", "a colorbar"),
        Sentence("plot_attention/title", "the title set when given"),
        Sentence("plot_attention/clim", "colour limits 0 and 1"),
        Sentence("plot_attention/ax",
                 "draws into `ax` when given, else into a new figure; returns the axes drawn into"),
        Sentence("plot_attention_heads/signature",
                 "`(weights, tokens, ncols=4, title=None) -> matplotlib.figure.Figure`"),
        Sentence("plot_attention_heads/grid",
                 "`weights (h, n, n)`; one heatmap per head in a grid of `ceil(h / ncols)` rows and "
                 "`min(h, ncols)` columns, row-major"),
        Sentence("plot_attention_heads/titles", 'the axes for head i is titled `"Head {i+1}"`'),
        Sentence("plot_attention_heads/layout", "follows the `plot_attention` layout with `tokens` on both axes"),
        Sentence("plot_attention_heads/colours",
                 "every head uses colour limits 0 and 1; a colorbar per head or one shared colorbar"),
        Sentence("plot_attention_heads/hidden",
                 "unused grid cells are hidden (`set_visible(False)` or `axis('off')`)"),
        Sentence("plot_attention_heads/suptitle", "the figure's suptitle is set when `title` is given"),
        Sentence("top_attended/signature", "`(weights, key_tokens, k=1) -> list[list[str]]`"),
        Sentence("top_attended/largest-first",
                 "for each query row, the `k` key tokens with the largest weights, largest first"),
        Sentence("top_attended/ties", "ties go to the lower key index"),
        Sentence("drawing-primitive", "Any drawing primitive that shows a matrix is fine",
                 untested="a freedom: the tests read what is displayed (tests/contract_corpus draws with "
                          "imshow, matshow and pcolormesh, and gets full marks)"),
    ),
    rows=(
        plot_fn("plot_attention", banned=NO_BANS,
                **{"args/ax": COVERED, "args/title": COVERED, "args/cmap": COVERED,
                   "size/one query, one key": COVERED}),
        plot_fn("plot_attention_heads", banned=NO_BANS, **{
            "inputs/tensor": NUMPY_WEIGHTS, "inputs/shared": NUMPY_WEIGHTS, "inputs/grad": NUMPY_WEIGHTS,
            "args/ncols < h": COVERED, "args/ncols > h": COVERED, "args/title": COVERED,
            "size/one head": COVERED, "size/h = ncols": COVERED}),
        plot_fn("top_attended", banned=NO_BANS, **{
            "inputs/tensor": NUMPY_WEIGHTS, "inputs/shared": NUMPY_WEIGHTS, "inputs/grad": NUMPY_WEIGHTS,
            "args/k = 1": COVERED, "args/k > 1": COVERED, "ties": COVERED, "size/one key": COVERED}),
    ),
)
