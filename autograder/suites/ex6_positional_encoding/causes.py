"""The mistakes of this exercise the kit can name (ids ``ex6.<name>``): see
:mod:`autograder.diagnosis.causes` for what a cause is and how a failing test names one."""
from __future__ import annotations

from autograder.diagnosis.causes import Cause


class Ex6Cause(Cause):
    """A mistake of ex6: ``Ex6Cause.<NAME>.sentence`` is what the student reads."""

    SWAPPED = (
        "ex6.swapped",
        "your table matches cos in the even columns and sin in the odd ones: PE[p, 2i] is the "
        "sine and PE[p, 2i+1] the cosine")
    NOT_INTERLEAVED = (
        "ex6.not_interleaved",
        "your table matches all the sines first, then all the cosines (torch.cat of two "
        "halves): the columns interleave, sine in column 2i, cosine in column 2i+1")
    EXPONENT_I = (
        "ex6.exponent_i",
        "your table matches 10000^(i/d_model) with the pair index i: the exponent is "
        "2i/d_model (with 2i the even column index, e.g. torch.arange(0, d_model, 2))")
    EXPONENT_COLUMN = (
        "ex6.exponent_column",
        "your table matches 10000^(j/d_model) with j the column itself: both columns of a "
        "pair share one frequency, so the cosine in column 2i+1 also uses 2i/d_model")
    FROM_ONE = (
        "ex6.from_one",
        "your table matches positions counted from 1: the first row is position 0, [0, 1, 0, 1, …]")
    MULTIPLIED = (
        "ex6.multiplied",
        "your table matches p · 10000^(2i/d_model): the position is *divided* by "
        "10000^(2i/d_model) (the frequencies fall from 1 towards 1/10000)")
    INTEGER_DIVISION = (
        "ex6.integer_division",
        "your table matches an exponent computed with integer division (2*i // d_model is "
        "0): every pair gets frequency 1; divide as floats")
    ODD_LAST_ZERO = (
        "ex6.odd_last_zero",
        "for an odd d_model your last column is 0: it is the sine of the last pair, "
        "sin(p / 10000^((d_model−1)/d_model)), with no cosine after it")
    ODD_LAST_COS = (
        "ex6.odd_last_cos",
        "for an odd d_model your last column matches a cosine: column d_model−1 is even, so it "
        "is the sine of its pair")
    IN_FLOAT32 = (
        "ex6.in_float32",
        "your float64 table matches the float32 one: compute in the requested dtype (or in "
        "float64 and cast), not in float32 and then convert")
    LEARNED_FROM_ONE = (
        "ex6.learned_from_one",
        "your result matches adding pos(1 … n) instead of pos(0 … n−1): positions start at 0")
    LEARNED_ONLY_POS = (
        "ex6.learned_only_pos",
        "your result matches pos(arange(n)) alone: forward adds the position vectors to x")
    LEARNED_WHOLE = (
        "ex6.learned_whole",
        "your result matches adding the whole table's first rows in another order: row t goes to position t")
    ADD_REVERSED = (
        "ex6.add_reversed",
        "your result matches adding pe's *last* n rows: position t gets row t, pe[:n]")
    ADD_ONLY_PE = (
        "ex6.add_only_pe",
        "your result matches pe[:n] alone: add_positional_encoding adds the rows to x")
    INDEX_ERROR_NOT_VALUE_ERROR = (
        "ex6.index_error_not_value_error",
        "an IndexError from indexing past the end of the table (nn.Embedding or pe[...]) "
        "instead of your own check: raise ValueError when n is too long")
    NO_LENGTH_CHECK = (
        "ex6.no_length_check",
        "no length check: raise ValueError when the sequence is longer than the table")
    NOT_ONLY_SIN_COS = (
        "ex6.not_only_sin_cos",
        "something is added or multiplied after the sin/cos (e.g. the position itself, "
        "or a scale): the table holds the sines and cosines alone")
    PLOT_TRANSPOSED = (
        "ex6.plot_transposed",
        "the table is transposed: positions are the rows, dimensions the columns")
    PLOT_UPSIDE_DOWN = (
        "ex6.plot_upside_down",
        "an upside-down image (origin='lower' or pcolormesh without inverting the y axis): "
        "position 0 is the top row")
    PLOT_AUTOMATIC_LIMITS = (
        "ex6.plot_automatic_limits",
        "automatic colour limits: pass vmin=-1, vmax=1")
    COPY_TOKENS_FROM_ONE = (
        "ex6.copy_tokens_from_one",
        "tokens drawn from [1, vocab_size): this task uses every token, torch.randint(0, vocab_size, …)")
    COPY_LABELS_VIEW = (
        "ex6.copy_labels_view",
        "labels = tokens[:, position] is a view of tokens: return tokens[:, position].clone()")
    COPY_LABELS_SHIFTED = (
        "ex6.copy_labels_shifted",
        "labels taken from position + 1: positions count from 0, labels = tokens[:, position]")
    LEARNED_TABLE_TOO_LONG = (
        "ex6.learned_table_too_long",
        "the learned model was built with a max_len larger than the training length, or the "
        "positions are cut or wrapped instead of raising ValueError")
    EXPERIMENT_NOT_AS_SPECIFIED = (
        "ex6.experiment_not_as_specified",
        "the training or test sets differ from the docstring's (sizes, seeds, position), "
        "the model is not trained with fit(…, steps), or the positions are not added")
    EXPERIMENT_SEEDED_ONCE = (
        "ex6.experiment_seeded_once",
        "your accuracies match seeding torch once for both models: call torch.manual_seed(seed) "
        "right before building each model, so that both start as the procedure says")
    EXPERIMENT_NOT_TRAINED = (
        "ex6.experiment_not_trained",
        "the accuracies do not come from training and testing the models (constants, or `steps` "
        "ignored)")
