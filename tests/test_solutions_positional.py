"""ex6: the model answer in ``solutions/`` agrees with ``reference/positional.py``.

(The checks every exercise shares — contract names exist, allowed imports, the stub raises
NotImplementedError — are in tests/test_solutions.py, parametrised over the registry.)
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.support.figures import describe_axes  # noqa: E402
from reference import positional as ref  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def sol():
    path = ROOT / "solutions" / "ex6_positional_encoding" / "positional.py"
    spec = importlib.util.spec_from_file_location("solution_positional", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("max_len,d_model", [(1, 1), (5, 2), (9, 7), (64, 32), (100, 33)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_sinusoidal_agrees(sol, max_len, d_model, dtype):
    got = sol.sinusoidal_encoding(max_len, d_model, dtype=dtype)
    want = ref.sinusoidal_encoding(max_len, d_model, dtype=dtype)
    assert got.dtype == dtype and got.shape == (max_len, d_model)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12 if dtype == torch.float64 else 1e-6)
    assert sol.sinusoidal_encoding(3, 4, device="cpu").device.type == "cpu"


def test_learned_agrees_with_same_weights(sol):
    torch.manual_seed(0)
    mine, theirs = sol.LearnedPositionalEmbedding(6, 4), ref.LearnedPositionalEmbedding(6, 4)
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict()) == ["pos.weight"]
    theirs.load_state_dict(mine.state_dict())
    for n in (1, 4, 6):
        x = torch.randn(3, n, 4)
        torch.testing.assert_close(mine(x), theirs(x))
    with pytest.raises(ValueError):
        mine(torch.randn(1, 7, 4))
    x64 = torch.randn(2, 5, 4, dtype=torch.float64)
    assert mine.double()(x64).dtype == torch.float64


@pytest.mark.parametrize("x_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("pe_dtype", [torch.float32, torch.float64])
def test_add_agrees(sol, x_dtype, pe_dtype):
    pe = ref.sinusoidal_encoding(9, 6, dtype=pe_dtype)
    for shape in [(2, 5, 6), (5, 6), (2, 3, 4, 6)]:
        x = torch.randn(*shape, dtype=x_dtype, requires_grad=True)
        got = sol.add_positional_encoding(x, pe)
        assert got.dtype == x_dtype
        torch.testing.assert_close(got, ref.add_positional_encoding(x, pe))
        got.sum().backward()
        assert x.grad is not None
    with pytest.raises(ValueError):
        sol.add_positional_encoding(torch.zeros(1, 10, 6), pe)


def test_copy_task_agrees(sol):
    for args in [(7, 5, 4, 0, 1), (3, 9, 11, 8, 42)]:
        for a, b in zip(sol.make_copy_task(*args), ref.make_copy_task(*args)):
            assert torch.equal(a, b)


def test_experiment_shows_the_same(sol):
    got = sol.extrapolation_experiment(seed=3)
    want = ref.extrapolation_experiment(seed=3)
    assert set(got) == set(want)
    assert got["learned_long"] is None and want["learned_long"] is None
    for key in ("sinusoidal_train", "learned_train"):
        assert got[key] >= 0.9 and want[key] >= 0.9


def test_plot_shows_the_same(sol):
    pe = ref.sinusoidal_encoding(7, 5)
    mine = describe_axes(sol.plot_encoding(pe, title="t").axes[0])
    theirs = describe_axes(ref.plot_encoding(pe, title="t").axes[0])
    for key in ("matrix", "clim", "has_colorbar", "title"):
        assert mine[key] == pytest.approx(theirs[key]) if key == "clim" else mine[key] == theirs[key], key
    plt.close("all")
