"""The mistakes of this exercise the kit can name (ids ``ex2.<name>``): see
:mod:`autograder.diagnosis.causes` for what a cause is and how a failing test names one."""
from __future__ import annotations

from autograder.diagnosis.causes import Cause


class Ex2Cause(Cause):
    """A mistake of ex2: ``Ex2Cause.<NAME>.sentence`` is what the student reads."""

    HEATMAP_TRANSPOSED = (
        "ex2.heatmap_transposed",
        "your heatmap is transposed: queries must be rows (top to bottom) and keys "
        "columns (left to right), i.e. draw weights, not weights.T")
    ROWS_FLIPPED = (
        "ex2.rows_flipped",
        "the rows are upside down: query 0 must be the TOP row. With imshow keep the "
        "default origin='upper' (origin='lower' puts row 0 at the bottom); with "
        "pcolormesh call ax.invert_yaxis()")
    COLUMNS_MIRRORED = (
        "ex2.columns_mirrored",
        "the columns are mirrored: key 0 must be the LEFTMOST column (do not invert the x axis)")
    ROTATED = (
        "ex2.rotated",
        "the heatmap is upside down and mirrored (rotated by 180°): query 0 belongs in the top "
        "row and key 0 in the left column")
    TRANSPOSED_FLIPPED = (
        "ex2.transposed_flipped",
        "your heatmap is transposed AND upside down: queries are rows counted from the top, "
        "keys columns counted from the left")
    TRANSPOSED_MIRRORED = (
        "ex2.transposed_mirrored",
        "your heatmap is transposed and mirrored: queries are rows counted from the top, keys "
        "columns counted from the left")
    QUERY_LABELS_BOTTOM_UP = (
        "ex2.query_labels_bottom_up",
        "the query labels run bottom-to-top: query 0 must be labelled at the TOP "
        "(origin='lower' without inverting the y axis?)")
    KEY_LABELS_RIGHT_TO_LEFT = (
        "ex2.key_labels_right_to_left",
        "the key labels run right-to-left: key 0 must be labelled at the LEFT")
    TOKENS_SWAPPED = (
        "ex2.tokens_swapped",
        "the token lists are swapped: query tokens label the y axis (rows) and key "
        "tokens the x axis (columns)")
    EXTRA_TICKS = (
        "ex2.extra_ticks",
        "there are extra, unlabelled ticks: set exactly one tick per token, at the "
        "cell centres (ax.set_xticks(range(m)) / ax.set_yticks(range(n)))")
    TICKS_SHIFTED = (
        "ex2.ticks_shifted",
        "the labels are shifted by one tick: set the tick positions first "
        "(set_xticks(range(m))) and then the labels, one per token")
    TICKS_MISSING = (
        "ex2.ticks_missing",
        "some tokens have no tick: set one tick per token (matplotlib's automatic "
        "ticks skip some)")
    TICKS_OFF_CELLS = (
        "ex2.ticks_off_cells",
        "the ticks are not at the cell centres (set_xticks(range(1, m + 1))?): with imshow or "
        "matshow cell i is centred at i, so the ticks are range(m); with pcolormesh at i + 0.5")
    TICKS_UNLABELLED = (
        "ex2.ticks_unlabelled",
        "the ticks have no labels: label them with the tokens (plt.subplots(..., sharex=True or "
        "sharey=True) hides the inner heatmaps' labels)")
    NO_COLORBAR = (
        "ex2.no_colorbar",
        "no fig.colorbar(image, ax=ax) call for the heatmap")
    TITLE_NONE_SHOWN = (
        "ex2.title_none_shown",
        "ax.set_title(title) is called even when title is None")
    DEFAULT_TITLE = (
        "ex2.default_title",
        "a default title where the docstring says \"left unset when None\"")
    AXIS_LABELS_SWAPPED = (
        "ex2.axis_labels_swapped",
        "the labels are swapped (keys are columns, along x)")
    LABEL_WORDING = (
        "ex2.label_wording",
        "a label must contain the word itself, capital letter included: \"Key\" in the x label "
        "(\"Keys\" or \"Key token\" do) and \"Query\" in the y label (\"Queries\" does not: "
        "the plural drops the y; nor does \"query\")")
    NO_COLOUR_LIMITS = (
        "ex2.no_colour_limits",
        "without vmin/vmax matplotlib scales the colours to each "
        "matrix's own min and max, so heatmaps of different heads cannot be compared")
    CMAP_IGNORED = (
        "ex2.cmap_ignored",
        "the cmap argument is not passed on to imshow / pcolormesh (cmap=cmap)")
    GIVEN_AX_IGNORED = (
        "ex2.given_ax_ignored",
        "plotting with plt.imshow / a new figure instead of the given ax (ax.imshow(...))")
    GRID_SWAPPED = (
        "ex2.grid_swapped",
        "rows and columns are swapped in plt.subplots(nrows, ncols)")
    GRID_NCOLS_NOT_CAPPED = (
        "ex2.grid_ncols_not_capped",
        "the grid size ignores that ncols is at most h (use min(h, ncols) columns and ceil(h / ncols) rows)")
    HEADS_FROM_ZERO = (
        "ex2.heads_from_zero",
        "heads are numbered from 1 in titles (\"Head 1\" is head 0)")
    HEADS_COLUMN_MAJOR = (
        "ex2.heads_column_major",
        "the heads fill the grid column by column: head i belongs in row i // ncols, column "
        "i % ncols (axes.flat is row-major)")
    HEADS_NO_COLORBAR = (
        "ex2.heads_no_colorbar",
        "no fig.colorbar(...) call for the heads' heatmaps")
    SPARE_CELLS_SHOWN = (
        "ex2.spare_cells_shown",
        "the grid's spare cells are left visible: hide every axes without a head (ax.set_visible(False) "
        "or ax.axis('off'))")
    NO_SUPTITLE = (
        "ex2.no_suptitle",
        "fig.suptitle(title) is missing (a title on one axes is not the figure's suptitle)")
    PLT_SHOW = (
        "ex2.plt_show",
        "plt.show() inside the plotting function (the docstring says: no plt.show())")
    TOP_INDICES = (
        "ex2.top_indices",
        "return the tokens key_tokens[j], not the indices j")
    TOP_SMALLEST = (
        "ex2.top_smallest",
        "you return the keys with the SMALLEST weights: sort in decreasing order "
        "(largest weight first)")
    CURRENT_FIGURE_REUSED = (
        "ex2.current_figure_reused",
        "without ax, the heatmap goes into pyplot's current figure (plt.gca(), plt.imshow(…)): "
        "make a new figure when no ax is given (fig, ax = plt.subplots())")
    TOP_TIES_HIGH = (
        "ex2.top_ties_high",
        "ties go to the higher key index in your code: among equal weights the key that comes "
        "first in key_tokens must come first (use a stable sort of -weights, or "
        "np.argsort(-row, kind='stable'))")
    TOP_INCREASING = (
        "ex2.top_increasing",
        "the right keys, but in increasing order of weight: list the largest first")
    TIES_TOPK = (
        "ex2.ties_topk",
        "ties are ordered by torch.topk, which does not put the lower key index first; among equal "
        "weights the key that comes first in key_tokens must come first: use a stable sort of the "
        "negated weights (np.argsort(-row, kind='stable'), torch.sort(-row, stable=True)) or "
        "sorted(range(m), key=lambda j: -row[j])")
    TIES_ARGSORT_DESCENDING = (
        "ex2.ties_argsort_descending",
        "ties are ordered by torch.argsort(…, descending=True), which does not put the lower key index "
        "first; among equal weights the key that comes first in key_tokens must come first: use a "
        "stable sort of the negated weights (np.argsort(-row, kind='stable'), torch.sort(-row, "
        "stable=True)) or sorted(range(m), key=lambda j: -row[j])")
    TIES_QUICKSORT = (
        "ex2.ties_quicksort",
        "ties are ordered by np.argsort(-weights) (its default quicksort is not stable), which does not "
        "put the lower key index first; among equal weights the key that comes first in key_tokens "
        "must come first: use a stable sort of the negated weights (np.argsort(-row, kind='stable'), "
        "torch.sort(-row, stable=True)) or sorted(range(m), key=lambda j: -row[j])")
