"""ex2 · the contract's general rules: the weights given to each function are left unchanged,
whatever kind they are (the exercise's rows in exercise.py list what each test covers).
plot_attention takes NumPy arrays and tensors, possibly requiring grad; the contract names
no kind for plot_attention_heads and top_attended, which are graded on NumPy arrays."""
from __future__ import annotations

import pytest

from autograder.suites.contract_rules import expect_inputs_unchanged
from autograder.suites.ex2_visualization.common import weights

KINDS = ("ndarray", "tensor", "shared", "grad")
NUMPY = ("ndarray",)
TOKENS = ["a", "b", "c"]
KEYS = ["k0", "k1", "k2", "k3"]


def _covers(name: str, kinds: tuple[str, ...] = KINDS):
    return pytest.mark.covers(name, *(f"{name}:inputs/{k}" for k in kinds))


def _each_kind(support, fn, what: str, args: list, names: list[str], tokens: list[str] | None = None,
               kinds: tuple[str, ...] = KINDS) -> None:
    try:
        for kind in kinds:
            expect_inputs_unchanged(support, fn, what, args, names, kind, which=[0], tokens=tokens)
    finally:
        support.modules.close_all()


@_covers("plot_attention")
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
def test_plot_attention_leaves_weights_unchanged(student, support):
    """plot_attention leaves the weights unchanged (NumPy array, tensor, tensor sharing memory with NumPy, tensor requiring grad)"""
    _each_kind(support, student.visualize.plot_attention, "visualize.plot_attention",
               [weights(3, 4, seed=7341), TOKENS, KEYS], ["weights", "query_tokens", "key_tokens"])


@_covers("plot_attention_heads", NUMPY)
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
def test_plot_attention_heads_leaves_weights_unchanged(student, support):
    """plot_attention_heads leaves the weights unchanged (a NumPy array)"""
    _each_kind(support, student.visualize.plot_attention_heads, "visualize.plot_attention_heads",
               [weights(3, 3, seed=7342, lead=(3,)), TOKENS, 2], ["weights", "tokens", "ncols"], kinds=NUMPY)


@_covers("top_attended", NUMPY)
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
def test_top_attended_leaves_weights_unchanged(student, support):
    """top_attended leaves the weights unchanged (a NumPy array)"""
    _each_kind(support, student.visualize.top_attended, "visualize.top_attended",
               [weights(3, 4, seed=7343), KEYS, 2], ["weights", "key_tokens", "k"], tokens=KEYS, kinds=NUMPY)
