"""Shared inputs and checks for the ex6 hidden suite (grader side; not a test file).

Every random input of this suite comes from :func:`gen`, drawn from the current test's
derived seeds (:mod:`autograder.seeds`: the build's secret, the submission's source and the
test), so no submission can predict or replay them; the public tests use literal seeds.
"""
from __future__ import annotations

from typing import Any

import torch

import reference.positional as ref
from autograder import seeds
from autograder.jsontypes import JSONObject
from autograder.diagnosis import ex6 as mistakes
from autograder.suites.ex6_positional_encoding.causes import Ex6Cause
from autograder.diagnosis.causes import General
from autograder.suites import checks

# float32 tables: sin/cos of angles up to max_len carry rounding of about max_len · 6e-8
F32_TOL = (0.0, 5e-5)          # (rtol, atol) for float32 tables with max_len <= 100
F64_TOL = (1e-9, 1e-10)


def gen(offset: int, name: str | None = None) -> torch.Generator:
    """The generator of one hidden input (``offset`` tells the inputs of a test apart;
    ``name``: a module-scoped fixture's own name, so its inputs do not depend on which test
    happens to set it up)."""
    return seeds.generator(offset, name)


EXPERIMENT_SEED = {"offset": 200, "name": "experiment"}     # the default experiment's hidden seed (its fixture's)


def seed(offset: int, name: str | None = None) -> int:
    """A hidden integer seed handed to the student's own functions (datasets, experiment)."""
    return int(torch.randint(0, 2**31 - 1, (1,), generator=gen(offset, name)))


def randn(offset: int, *shape: int, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=gen(offset), dtype=torch.float64).to(dtype)


def learned_state(offset: int, max_len: int, d_model: int) -> dict[str, torch.Tensor]:
    """A float32 state for LearnedPositionalEmbedding: ``{"pos.weight": (max_len, d_model)}``."""
    return {"pos.weight": randn(offset, max_len, d_model)}


def tol(dtype: Any) -> tuple[float, float]:
    return F64_TOL if dtype == torch.float64 else F32_TOL


def expect_tensor(value: Any, what: str) -> torch.Tensor:
    checks.expect_type(value, torch.Tensor, what)
    return value


def expect_table(got: Any, max_len: int, d_model: int, dtype: torch.dtype, what: str) -> None:
    """A sinusoidal table: shape, dtype, finite, then values against the formula (with the
    known wrong tables named when one matches)."""
    inputs = f"max_len={max_len}, d_model={d_model}, dtype={dtype}"
    table = expect_tensor(got, what)
    checks.expect_shape(table, (max_len, d_model), what, inputs)
    checks.expect_dtype(table, dtype, what)
    checks.expect_finite(table, what, inputs)
    rtol, atol = tol(dtype)
    checks.expect_close(table, ref.sinusoidal_encoding(max_len, d_model, torch.float64), what,
                        inputs=inputs, rtol=rtol, atol=atol,
                        mistakes=lambda: mistakes.sinusoidal(max_len, d_model, dtype))


def table(student, support, max_len: int, d_model: int, dtype: str) -> Any:
    """``sinusoidal_encoding(max_len, d_model, dtype=torch.<dtype>)`` in the worker (a dtype is
    no wire value: ``support.arguments`` builds it there)."""
    with checks.calling("positional.sinusoidal_encoding"):
        return support.arguments.call(student.positional.sinusoidal_encoding, [max_len, d_model], {},
                                      {"dtype": dtype})


def expect_unchanged(changes: list[float], names: list[str], function: str) -> None:
    touched = [n for n, c in zip(names, changes) if c != 0.0]
    if touched:
        checks.fail(f"{function} modified its input(s) {', '.join(touched)} in place",
                    General.IN_PLACE)


def learned_module(student, support, offset: int, max_len: int, d_model: int):
    """(the student's ``LearnedPositionalEmbedding(max_len, d_model)``, built fresh, with the
    hidden table of seed number ``offset`` loaded; that table, (max_len, d_model) float32)."""
    module = student.positional.LearnedPositionalEmbedding(max_len, d_model)
    state = learned_state(offset, max_len, d_model)
    load_learned(support, module, state)
    return module, state["pos.weight"]


def load_learned(support, remote, state: dict[str, torch.Tensor]) -> None:
    """Give the student's module the hidden weights (its only parameter is ``pos.weight``; its
    own buffers, which the contract leaves free, are kept: ``support.modules.load_weights``)."""
    from autograder.sandbox import StudentError
    try:
        support.modules.load_weights(remote, state)
    except StudentError as exc:
        why = " ".join(line.strip() for line in str(exc).split("\nwhere")[0].splitlines() if line.strip())
        checks.fail("the grader could not load weights into your LearnedPositionalEmbedding with "
                    "load_state_dict; its only submodule must be pos = nn.Embedding(max_len, d_model): "
                    + why[:400])


def expect_value_error(call, what: str, why: str) -> None:
    """``call()`` (a student call) must raise ValueError; ``why`` says when it should."""
    from autograder.sandbox import NotImplementedByStudent, StudentError
    try:
        call()
    except NotImplementedByStudent:
        raise
    except StudentError as exc:
        kind = exc.raised
        if kind != "ValueError":
            cause = (Ex6Cause.INDEX_ERROR_NOT_VALUE_ERROR if kind == "IndexError" else
                     General.ASSERT_FOR_VALUE_ERROR if kind == "AssertionError" else None)
            checks.fail(f"{what} should raise ValueError ({why}); it raised {kind or 'an error'}", cause)
    else:
        checks.fail(f"{what} should raise ValueError ({why}) but raised nothing",
                    Ex6Cause.NO_LENGTH_CHECK)


# --------------------------------------------------------------------------- values first
# A property (inputs left alone, dtype, device, bounds, the length check) is judged on an answer
# that is right: a function that computes nothing must not collect the property's points.

def expect_sum(got: Any, x: torch.Tensor, pe: torch.Tensor, what: str, dtype: torch.dtype) -> None:
    """``add_positional_encoding(x, pe)`` is ``x + pe[:n]`` in ``dtype`` (x's)."""
    inputs = checks.describe_inputs(x=x, pe=pe) + f", x {x.dtype}, pe {pe.dtype}"
    expect_tensor(got, what)
    checks.expect_shape(got, tuple(x.shape), what, inputs)
    checks.expect_dtype(got, dtype, what)
    rtol, atol = (1e-12, 1e-12) if dtype == torch.float64 else (1e-5, 1e-6)
    checks.expect_close(got, (x + pe[:x.shape[-2]].to(x.dtype)).double(), what,
                        inputs=inputs, rtol=rtol, atol=atol, mistakes=lambda: mistakes.added(x, pe))


def expect_learned(out: Any, x: torch.Tensor, weight: torch.Tensor, what: str) -> None:
    """``LearnedPositionalEmbedding.forward(x)`` with ``pos.weight = weight`` is ``x + weight[:n]``."""
    n = x.shape[-2]
    inputs = checks.describe_inputs(x=x) + f", max_len={weight.shape[0]}"
    expect_tensor(out, what)
    checks.expect_shape(out, tuple(x.shape), what, inputs)
    checks.expect_close(out, x.double() + weight.double()[:n], what, inputs=inputs,
                        rtol=1e-5, atol=1e-6, mistakes=lambda: mistakes.learned(x, weight))


def draw(student, support, pe, **kwargs) -> JSONObject:
    """Call plot_encoding once in the worker and describe the axes drawn into."""
    from autograder.sandbox import UnsupportedValue
    try:
        try:
            fig = student.positional.plot_encoding(pe, **kwargs)
            types = support.modules.type_names(fig)
        except UnsupportedValue:
            fig, types = None, ["(a value the grader cannot receive)"]
        if "Figure" not in types:
            checks.fail(f"plot_encoding returned a {types[0]}, expected the matplotlib Figure it drew into")
        ax = support.modules.find_axes(fig)
        if ax is None:
            checks.fail("plot_encoding: the returned figure holds no axes with a heatmap")
        return support.figures.describe_axes(ax)
    finally:
        support.modules.close_all()


def expect_shows(info: JSONObject, pe: torch.Tensor, what: str) -> None:
    """The heatmap shows ``pe`` (position p as row p from the top)."""
    import numpy as np
    got = checks.shown_matrix(info, what)
    want = pe.detach().double().numpy()
    if got.shape == want.T.shape and got.shape != want.shape:
        checks.fail(f"{what}: the heatmap shows {got.shape[0]} rows × {got.shape[1]} columns for a "
                    f"table of {want.shape[0]} positions × {want.shape[1]} dimensions",
                    Ex6Cause.PLOT_TRANSPOSED)
    if got.shape == want.shape and np.allclose(got, want[::-1], atol=1e-6):
        checks.fail(f"{what}: position 0 is shown at the bottom",
                    Ex6Cause.PLOT_UPSIDE_DOWN)
    checks.expect_close(got, want, "the displayed table", inputs=f"pe {tuple(want.shape)}", rtol=1e-5, atol=1e-6)
