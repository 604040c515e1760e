# Public tests of ex6, a copy shipped with the release. Run them from anywhere in the
# release: `python check.py` in ex6_positional_encoding/ (or `python check.py ex6` in the release
# folder), `pytest` in ex6_positional_encoding/, or the last cell of ex6_positional_encoding.ipynb. They need the
# release's autograder/ folder (the fixtures `student` and `support` come from it).
"""ex6 · public tests: invariants and small hand-checkable values (shipped to students).

Run them with ``python -m autograder check ex6`` in the folder that holds positional.py.
The hidden tests check much more (other sizes and odd widths, float64, the device argument,
the relative-position property, gradients, the copy task, the experiment, the heatmap).
"""
from __future__ import annotations

import math

import pytest
import torch

from autograder.suites.checks import expect_close, expect_type


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("sinusoidal_encoding/formula")
def test_public_sinusoidal_3x4(student):
    """sinusoidal_encoding(3, 4) by hand: sines in even columns, cosines in odd ones"""
    got = student.positional.sinusoidal_encoding(3, 4)
    expect_type(got, torch.Tensor, "sinusoidal_encoding(3, 4)")
    assert tuple(got.shape) == (3, 4), f"expected shape (3, 4), got {tuple(got.shape)}"
    assert got.dtype == torch.float32, f"expected dtype torch.float32 (the default), got {got.dtype}"
    want = torch.tensor([[math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)] for p in range(3)])
    expect_close(got, want, "sinusoidal_encoding(3, 4)", rtol=1e-5, atol=1e-6, reveal=True)


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("LearnedPositionalEmbedding/forward", "LearnedPositionalEmbedding/raises")
def test_public_learned_adds_rows(student, support):
    """LearnedPositionalEmbedding adds pos.weight[t] at position t, and refuses n > max_len"""
    module = student.positional.LearnedPositionalEmbedding(4, 2)
    weight = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    support.modules.load_weights(module, {"pos.weight": weight})     # load_state_dict; your buffers kept
    x = torch.zeros(2, 3, 2)
    out = module(x)
    expect_type(out, torch.Tensor, "forward(x)")
    assert tuple(out.shape) == (2, 3, 2), f"expected shape (2, 3, 2), got {tuple(out.shape)}"
    expect_close(out, weight[:3].expand(2, 3, 2), "forward(zeros (2, 3, 2))", reveal=True)
    try:
        module(torch.zeros(1, 5, 2))
    except Exception as exc:                               # arrives as the grader's StudentError
        kind = getattr(exc, "raised", "") or type(exc).__name__
        assert kind == "ValueError", f"forward with 5 positions and max_len=4 raised {kind}, expected ValueError"
    else:
        raise AssertionError("forward with 5 positions and max_len=4 should raise ValueError")


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("add_positional_encoding/sum")
def test_public_add_broadcasts(student):
    """add_positional_encoding adds pe[:n] to every sequence of the batch"""
    x = torch.tensor([[[1.0, 1.0], [1.0, 1.0]], [[2.0, 0.0], [0.0, 2.0]]])      # (2, 2, 2)
    pe = torch.tensor([[0.5, -0.5], [0.25, 0.75], [9.0, 9.0]])                   # (3, 2)
    before = x.clone()
    out = student.positional.add_positional_encoding(x, pe)
    expect_type(out, torch.Tensor, "add_positional_encoding(x, pe)")
    expect_close(out, x + pe[:2], "add_positional_encoding(x, pe)", reveal=True)
    assert torch.equal(x, before), "add_positional_encoding modified x in place"
