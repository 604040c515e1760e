"""ex2: the plotting functions return their drawing; they never call plt.show()."""
from __future__ import annotations

import pytest

from autograder.suites.ex2_visualization.causes import Ex2Cause
from autograder.suites.checks import fail
from autograder.suites.ex2_visualization.common import expect_finite_heatmap, got_axes

pytestmark = pytest.mark.covers("plot_attention", "plot_attention_heads")


@pytest.mark.note("The contract does not mention plt.show(). Calling it inside a plotting "
                  "function opens a window (or blocks) where the caller did not ask for one; with "
                  "the grader's non-interactive backend it does nothing.")
def test_no_plt_show(plain, heads5, heads2):
    """plot_attention and plot_attention_heads do not call plt.show()"""
    for what, drawn in (("plot_attention", plain), ("plot_attention_heads", heads5),
                        ("plot_attention_heads", heads2)):
        _expect_a_working_plot(drawn, what)
        if drawn.get("shows"):
            fail(f"{what}(…) called plt.show() {drawn['shows']} time(s): return the figure or axes "
                 "and let the caller decide to show it",
                 cause=Ex2Cause.PLT_SHOW)


def _expect_a_working_plot(drawn: dict, what: str) -> None:
    """This rule is judged on a plot that works: it shows a heatmap, and every heatmap it
    shows has numbers in every cell (a grid's spare axes, which show none, are not judged)."""
    info = got_axes(drawn, what)
    shown = [ax for ax in info["axes"] if ax.get("matrix") is not None] if "axes" in info else [info]
    if not shown:
        fail(f"{what}(…) shows no heatmap: this rule is judged on a plot that works")
    for ax in shown:
        expect_finite_heatmap(ax, f"{what}(…)")
