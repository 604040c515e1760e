"""The ex6 oracle against the formula of "Attention Is All You Need" (section 3.5), written
as plain loops in Python float64 arithmetic, and against its own stated properties."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from reference import positional as ref  # noqa: E402


def _paper_table(max_len: int, d_model: int) -> list[list[float]]:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."""
    rows = []
    for pos in range(max_len):
        row = []
        for col in range(d_model):
            i = col // 2                                    # the pair this column belongs to
            angle = pos / (10000.0 ** (2 * i / d_model))
            row.append(math.sin(angle) if col % 2 == 0 else math.cos(angle))
        rows.append(row)
    return rows


@pytest.mark.parametrize("max_len,d_model", [(1, 1), (1, 2), (6, 4), (9, 7), (50, 16), (33, 33), (128, 64)])
def test_sinusoidal_table_is_the_papers_formula(max_len, d_model):
    want = torch.tensor(_paper_table(max_len, d_model), dtype=torch.float64)
    got = ref.sinusoidal_encoding(max_len, d_model, dtype=torch.float64)
    assert got.shape == (max_len, d_model) and got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    got32 = ref.sinusoidal_encoding(max_len, d_model)                    # default float32
    assert got32.dtype == torch.float32
    torch.testing.assert_close(got32, want.float(), rtol=0, atol=1e-6)


def test_row_zero_and_device():
    pe = ref.sinusoidal_encoding(3, 6, device="cpu")
    assert pe.device.type == "cpu"
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("d_model", [2, 8, 9])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_offset_matrix_moves_every_position_by_k(d_model, k):
    pe = ref.sinusoidal_encoding(40, d_model, dtype=torch.float64)
    M = ref.offset_matrix(k, d_model)
    even = 2 * (d_model // 2)                                           # columns with a partner
    for p in range(40 - k):
        # by loops: the pair (sin a, cos a) rotated by b is (sin(a+b), cos(a+b))
        moved = [sum(float(M[r, c]) * float(pe[p, c]) for c in range(d_model)) for r in range(even)]
        assert moved == pytest.approx(pe[p + k, :even].tolist(), abs=1e-12)
    assert torch.count_nonzero(M - torch.block_diag(*[M[i:i + 2, i:i + 2] for i in range(0, even, 2)],
                                                    *([torch.zeros(1, 1, dtype=torch.float64)] * (d_model % 2)))) == 0


def test_learned_embedding_by_loops():
    torch.manual_seed(0)
    module = ref.LearnedPositionalEmbedding(5, 3)
    assert [name for name, _ in module.named_parameters()] == ["pos.weight"]
    x = torch.randn(2, 4, 3)
    out = module(x)
    for b in range(2):
        for t in range(4):
            torch.testing.assert_close(out[b, t], x[b, t] + module.pos.weight[t])
    with pytest.raises(ValueError):
        module(torch.randn(1, 6, 3))


def test_add_positional_encoding_broadcasts_and_keeps_dtype():
    pe = ref.sinusoidal_encoding(10, 4, dtype=torch.float64)
    x = torch.randn(3, 6, 4)
    before = x.clone()
    out = ref.add_positional_encoding(x, pe)
    assert out.dtype == torch.float32 and out.shape == (3, 6, 4) and torch.equal(x, before)
    for b in range(3):
        for t in range(6):
            torch.testing.assert_close(out[b, t], x[b, t] + pe[t].float())
    torch.testing.assert_close(ref.add_positional_encoding(x[0], pe), out[0])
    with pytest.raises(ValueError):
        ref.add_positional_encoding(torch.randn(1, 11, 4), pe)


def test_copy_task_by_hand():
    tokens, labels = ref.make_copy_task(6, 5, 4, position=2, seed=3)
    g = torch.Generator().manual_seed(3)
    assert torch.equal(tokens, torch.randint(0, 4, (6, 5), generator=g))
    assert labels.tolist() == [row[2] for row in tokens.tolist()]
    assert labels.data_ptr() != tokens.data_ptr()


def test_experiment_shows_that_only_sinusoidal_extrapolates():
    torch.set_num_threads(1)
    out = ref.extrapolation_experiment(seed=11)
    assert set(out) == {"sinusoidal_train", "sinusoidal_long", "learned_train", "learned_long"}
    assert out["learned_long"] is None
    assert out["sinusoidal_train"] >= 0.9 and out["learned_train"] >= 0.9
    assert 0.0 <= out["sinusoidal_long"] <= 1.0


def test_plot_encoding_shows_positions_as_rows():
    from autograder.support.figures import describe_axes
    pe = ref.sinusoidal_encoding(6, 4)
    fig = ref.plot_encoding(pe, title="PE")
    info = describe_axes(fig.axes[0])
    torch.testing.assert_close(torch.tensor(info["matrix"], dtype=torch.float64), pe.double())
    assert info["clim"] == [-1.0, 1.0] and info["has_colorbar"] and info["title"] == "PE"
    assert "position" in info["ylabel"] and "dimension" in info["xlabel"]
    matplotlib.pyplot.close("all")
