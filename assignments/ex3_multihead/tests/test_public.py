# Public tests of ex3, a copy shipped with the release. Run them from anywhere in the
# release: `python check.py` in ex3_multihead/ (or `python check.py ex3` in the release
# folder), `pytest` in ex3_multihead/, or the last cell of ex3_multihead.ipynb. They need the
# release's autograder/ folder (the fixtures `student` and `support` come from it).
"""ex3 public tests: shapes, the head layout on a tiny hand-checkable tensor, and invariants.
The hidden tests compare against a reference implementation with loaded weights, with
several masks, cross-attention, float64 and gradients.

``student.multihead`` is your multihead.py; ``support.modules.describe(model)`` lists a
module's submodules and parameters.
"""
import pytest
import torch

from autograder.sandbox import NotImplementedByStudent, StudentError
from autograder.diagnosis.causes import Cause
from autograder.suites.ex3_multihead.causes import Ex3Cause
from autograder.suites.checks import expect_equal, expect_tuple, expect_type, fail


def _rows_cause(w: torch.Tensor) -> Cause | None:
    """Weights whose columns (over the queries) sum to 1 instead of their rows: the softmax axis."""
    return Ex3Cause.SOFTMAX_AXIS if torch.allclose(w.sum(-2), torch.ones(()), atol=1e-5) else None


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("split_heads/features")
def test_public_split_heads_layout(student):
    """public: split_heads gives head i the features i·d_head … (i+1)·d_head − 1"""
    x = torch.arange(12.0).reshape(1, 2, 6)          # 1 batch, 2 tokens, d_model = 6
    got = student.multihead.split_heads(x, 3)          # 3 heads of 2 features
    expect_type(got, torch.Tensor, "split_heads(x, 3)")
    want = torch.tensor([[[[0., 1.], [6., 7.]],
                          [[2., 3.], [8., 9.]],
                          [[4., 5.], [10., 11.]]]])
    assert tuple(got.shape) == (1, 3, 2, 2), f"split_heads shape {tuple(got.shape)}, expected (1, 3, 2, 2)"
    expect_equal(got, want, "split_heads(arange(12).reshape(1, 2, 6), 3)", reveal=True)   # public: show both


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("combine_heads/inverse")
def test_public_round_trip(student):
    """public: combine_heads(split_heads(x, h)) == x (uses both split_heads and combine_heads)"""
    x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))
    back = student.multihead.combine_heads(student.multihead.split_heads(x, 4))
    expect_type(back, torch.Tensor, "combine_heads(split_heads(x, 4))")
    assert tuple(back.shape) == (2, 3, 8), f"round trip shape {tuple(back.shape)}, expected (2, 3, 8)"
    assert torch.equal(back, x), ("combine_heads(split_heads(x, 4)) differs from x: split_heads or "
                                  "combine_heads (this test uses both; the split_heads test above checks it alone)")


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("MultiHeadAttention/structure", "MultiHeadAttention.forward/shapes")
def test_public_module(student, support):
    """public: MultiHeadAttention: parameters W_q, W_k, W_v, W_o; output and weight shapes; rows sum to 1"""
    model = student.multihead.MultiHeadAttention(8, 2)
    info = support.modules.describe(model)
    want = sorted(f"{p}.{k}" for p in ("W_q", "W_k", "W_v", "W_o") for k in ("weight", "bias"))
    assert sorted(info["parameters"]) == want, f"parameters are {sorted(info['parameters'])}, expected {want}"
    g = torch.Generator().manual_seed(1)
    q, kv = torch.randn(2, 3, 8, generator=g), torch.randn(2, 5, 8, generator=g)
    out, w = expect_tuple(model(q, kv, kv), 2, "model(query, key, value)")
    expect_type(out, torch.Tensor, "the output")
    expect_type(w, torch.Tensor, "the weights")
    assert tuple(out.shape) == (2, 3, 8), f"output shape {tuple(out.shape)}, expected (2, 3, 8)"
    assert tuple(w.shape) == (2, 2, 3, 5), f"weights shape {tuple(w.shape)}, expected (2, 2, 3, 5)"
    if not torch.allclose(w.sum(-1), torch.ones(2, 2, 3), atol=1e-5):
        fail("weights rows do not sum to 1", _rows_cause(w.detach()))


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("MultiHeadAttention.forward/mask", "conventions/masks")
def test_public_mask(student):
    """public: MultiHeadAttention: masked keys (mask False) get weight 0"""
    model = student.multihead.MultiHeadAttention(4, 2)
    x = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(2))
    mask = torch.tensor([[True, False, False],
                         [True, True, False],
                         [True, True, True]])
    _, w = expect_tuple(model(x, x, x, mask), 2, "model(x, x, x, mask)")
    expect_type(w, torch.Tensor, "the weights")
    w = w.detach()
    if not torch.all(w[..., ~mask] == 0):
        inverted = bool(torch.all(w[..., mask & ~mask.all(-1, keepdim=True)] == 0))   # True read as masked
        fail("weights of masked keys (mask False) are not 0", Ex3Cause.MASK_INVERTED if inverted else None)
    if not torch.allclose(w.sum(-1), torch.ones(1, 2, 3), atol=1e-5):
        fail("weights rows do not sum to 1", _rows_cause(w))


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("MultiHeadAttention/raises")
def test_public_value_error(student):
    """public: MultiHeadAttention(10, 3) raises ValueError; MultiHeadAttention(9, 3) works"""
    try:
        student.multihead.MultiHeadAttention(10, 3)
    except NotImplementedByStudent:
        raise
    except StudentError as exc:                 # judged by the type name of what it raised
        kind = exc.raised or type(exc).__name__
        assert kind == "ValueError", f"raised {kind}, expected ValueError"
    else:
        raise AssertionError("MultiHeadAttention(10, 3) raised nothing, expected ValueError")
    # the point is for a check in a working module, not for a constructor that only raises
    x = torch.randn(1, 2, 9, generator=torch.Generator().manual_seed(3))
    out, _ = expect_tuple(student.multihead.MultiHeadAttention(9, 3)(x, x, x), 2, "MultiHeadAttention(9, 3)(x, x, x)")
    expect_type(out, torch.Tensor, "the output")
    assert tuple(out.shape) == (1, 2, 9) and bool(torch.isfinite(out.detach()).all()), \
        f"MultiHeadAttention(9, 3)(x, x, x) should give a finite output of shape (1, 2, 9), got {tuple(out.shape)}"
