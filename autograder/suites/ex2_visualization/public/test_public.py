"""ex2 public tests: small hand-checkable cases. The hidden tests check the same rules on
other inputs (and more of them: titles, colorbars, tensors, the heads' grid, ties…).

``student.visualize`` is your visualize.py; ``support.figures.describe_axes(ax)`` reads
back what an axes displays (the matrix as shown, row 0 at the top; tick labels in display
order; labels; colour limits).
"""
import numpy as np
import pytest

W = np.array([[0.7, 0.2, 0.1],
              [0.1, 0.3, 0.6]])          # 2 queries × 3 keys
QUERIES = ["I", "ran"]
KEYS = ["you", "sat", "down"]


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/orientation")
def test_public_heatmap_orientation(student, support):
    """public: plot_attention: query i is row i from the top, key j is column j from the left"""
    ax = student.visualize.plot_attention(W, QUERIES, KEYS)
    info = support.figures.describe_axes(ax)
    support.modules.close_all()
    assert info["matrix"] is not None, "no heatmap found (use imshow, matshow or pcolormesh)"
    shown = np.array(info["matrix"], dtype=float)
    assert shown.shape == (2, 3), f"the heatmap should be 2 rows × 3 columns, got {shown.shape}"
    assert np.allclose(shown, W), (f"the heatmap shows {shown.tolist()} (top row first); "
                                   f"expected {W.tolist()}")


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("plot_attention/ticks", "plot_attention/labels", "plot_attention/clim", "plot_attention/colorbar")
def test_public_ticks_labels_colours(student, support):
    """public: plot_attention: one tick per token, Key / Query axis labels, colour limits 0 and 1, a colorbar"""
    ax = student.visualize.plot_attention(W, QUERIES, KEYS)
    info = support.figures.describe_axes(ax)
    support.modules.close_all()
    assert info["yticklabels"] == QUERIES, f"y tick labels (top to bottom) are {info['yticklabels']}, expected {QUERIES}"
    assert info["xticklabels"] == KEYS, f"x tick labels (left to right) are {info['xticklabels']}, expected {KEYS}"
    wrong = [f"the {axis} label {info[label]!r} does not contain {word!r}"
             for axis, label, word in (("x", "xlabel", "Key"), ("y", "ylabel", "Query")) if word not in info[label]]
    assert not wrong, "; ".join(wrong)
    assert info["clim"] == [0.0, 1.0], f"colour limits are {info['clim']}, expected [0.0, 1.0]"
    assert info["has_colorbar"], "no colorbar attached to the heatmap"


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("plot_attention_heads/grid", "plot_attention_heads/titles", "plot_attention_heads/hidden")
def test_public_heads_grid(student, support):
    """public: plot_attention_heads: 3 heads with ncols=2 make a 2 × 2 grid titled Head 1..3, the spare cell hidden"""
    w = np.stack([W[:, :2] / W[:, :2].sum(-1, keepdims=True)] * 3)      # (3, 2, 2)
    fig = student.visualize.plot_attention_heads(w, ["a", "b"], ncols=2)
    info = support.figures.describe_figure(fig)
    support.modules.close_all()
    assert info["grid"] == [2, 2], f"grid is {info['grid']}, expected [2, 2]"
    shown = [(a["row"], a["col"], a["title"]) for a in info["axes"] if a["visible"]]
    assert shown == [(0, 0, "Head 1"), (0, 1, "Head 2"), (1, 0, "Head 3")], (
        f"visible axes (row, column, title): {shown}, expected [(0, 0, 'Head 1'), (0, 1, 'Head 2'), (1, 0, 'Head 3')]")


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("top_attended/largest-first", "top_attended/ties")
def test_public_top_attended(student):
    """public: top_attended, largest first, ties to the lower key index"""
    w = np.array([[0.4, 0.2, 0.4],
                  [0.1, 0.6, 0.3]])
    got = student.visualize.top_attended(w, KEYS, k=2)
    want = [["you", "down"], ["sat", "down"]]
    assert got == want, f"top_attended(w, {KEYS}, k=2) returned {got}, expected {want}"
