"""ex2: the plotting functions return their drawing; they never call plt.show()."""
from __future__ import annotations

import pytest

from autograder.suites.checks import fail

pytestmark = pytest.mark.covers("plot_attention", "plot_attention_heads")


@pytest.mark.covers("plot_attention:rules/no plt.show()", "plot_attention_heads:rules/no plt.show()")
@pytest.mark.points(0.5)
def test_no_plt_show(plain, heads5, heads2):
    """plot_attention and plot_attention_heads do not call plt.show()"""
    for what, drawn in (("plot_attention", plain), ("plot_attention_heads", heads5),
                        ("plot_attention_heads", heads2)):
        if not _draws_a_heatmap(drawn):
            fail(f"{what}(…) drew no complete heatmap (no matrix shown, or empty/NaN cells): "
                 "this rule is judged on a plot that works")
        if drawn.get("shows"):
            fail(f"{what}(…) called plt.show() {drawn['shows']} time(s): return the figure or axes "
                 "and let the caller decide to show it",
                 cause="plt.show() inside the plotting function (the docstring says: no plt.show())")


def _draws_a_heatmap(drawn: dict) -> bool:
    """The drawing shows a matrix, and every matrix it shows has no empty (masked or NaN)
    cells (a grid's spare axes, which show none, are not judged here)."""
    info = drawn.get("info")
    if not info:
        return False
    shown = [ax.get("matrix") for ax in info["axes"]] if "axes" in info else [info.get("matrix")]
    matrices = [m for m in shown if m is not None]
    return bool(matrices) and all(m and all(cell is not None for row in m for cell in row)
                                  for m in matrices)
