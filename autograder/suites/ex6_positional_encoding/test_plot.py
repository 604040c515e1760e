"""ex6 · plot_encoding: what the heatmap displays (read back with the kit's figure inspector)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import reference.positional as ref
from autograder.suites.ex6_positional_encoding.causes import Ex6Cause
from autograder.suites import checks
from autograder.suites.ex6_positional_encoding import common

TITLE = "PE · 12 positions"


@pytest.fixture(scope="module")
def drawn(student, support):
    pe = ref.sinusoidal_encoding(12, 10) * 0.8                      # data range (-0.8, 0.8)
    return pe, common.draw(student, support, pe.clone().requires_grad_(True), title=TITLE)


@pytest.mark.points(1.5)
@pytest.mark.covers("plot_encoding")
@pytest.mark.contract("plot_encoding/heatmap")
def test_matrix(drawn):
    """plot_encoding shows position p as row p from the top, dimension j as column j"""
    pe, info = drawn
    common.expect_shows(info, pe, "plot_encoding")


@pytest.mark.points(1)
@pytest.mark.covers("plot_encoding")
@pytest.mark.contract("plot_encoding/labels", "plot_encoding/title")
def test_labels_and_title(drawn):
    """plot_encoding: x label says "dimension", y label "position", the title is set"""
    _, info = drawn
    xlabel, ylabel = info.get("xlabel", ""), info.get("ylabel", "")
    if "dimension" not in xlabel.lower() or "position" not in ylabel.lower():
        checks.fail(f"plot_encoding: the x label should contain 'dimension' and the y label 'position'; "
                    f"got x label {xlabel!r} and y label {ylabel!r}")
    if info.get("title") != TITLE:
        checks.fail(f"plot_encoding(…, title=…): the axes' title is {info.get('title')!r}, not the given title")


@pytest.mark.points(1)
@pytest.mark.covers("plot_encoding")
@pytest.mark.contract("plot_encoding/clim", "plot_encoding/colorbar")
def test_colour_limits_and_colorbar(drawn):
    """plot_encoding: colour limits -1 and 1, with a colorbar"""
    _, info = drawn
    checks.expect_finite_heatmap(info, "plot_encoding(pe)")
    clim = info.get("clim")
    if clim is None or not np.allclose(clim, [-1.0, 1.0]):
        checks.fail(f"plot_encoding: colour limits are {clim}, expected [-1, 1] whatever the data's range",
                    Ex6Cause.PLOT_AUTOMATIC_LIMITS)
    if not info.get("has_colorbar"):
        checks.fail("plot_encoding: no colorbar (fig.colorbar(image, ax=ax))")


@pytest.mark.covers("plot_encoding:ax")
@pytest.mark.points(0.5)
@pytest.mark.contract("plot_encoding/returns", "plot_encoding/signature")
@pytest.mark.covers("plot_encoding:args/ax")
def test_draws_into_given_axes(student, support):
    """plot_encoding(pe, ax=ax) draws into ax and returns its figure (not pyplot's current one)"""
    pe = ref.sinusoidal_encoding(5, 4)
    try:
        fig, axes = support.modules.new_axes(1, 2, (7.0, 3.0))
        support.modules.new_axes(1, 1, (3.0, 3.0))        # another figure, now pyplot's current one
        returned = student.positional.plot_encoding(pe, ax=axes[1])
        same = support.modules.same_object(returned, fig)
        info = support.figures.describe_axes(axes[1])
    finally:
        support.modules.close_all()
    if not same:
        checks.fail("plot_encoding(pe, ax=ax) should return ax's figure (ax.figure), even when another "
                    "figure is pyplot's current one (plt.gcf())")
    if info.get("matrix") is None:
        checks.fail("plot_encoding(pe, ax=ax) did not draw into the given axes")
    checks.expect_finite_heatmap(info, "plot_encoding(pe, ax=ax)")
