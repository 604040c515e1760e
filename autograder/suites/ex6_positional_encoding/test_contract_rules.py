"""ex6 · the contract's general rules: inputs of every kind left alone, the device kept
(meta tensors; the device argument and x's device have tests of their own in test_sinusoidal.py
and test_add.py) (the exercise's rows in exercise.py list what each test covers)."""
from __future__ import annotations

import pytest
import torch

import reference.positional as ref
from autograder.suites import checks
from autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta, kind_id
from autograder.suites.ex6_positional_encoding import common

KINDS = ("shared", "grad")


def _kinds(name: str, kinds: tuple[str, ...] = KINDS):
    return [pytest.param(k, id=kind_id(k), marks=pytest.mark.covers(name.split(".")[0], f"{name}:inputs/{k}"))
            for k in kinds]


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", _kinds("add_positional_encoding"))
@pytest.mark.contract("conventions/inputs")
def test_add_leaves_inputs_unchanged(student, support, kind):
    """add_positional_encoding leaves x and pe unchanged, whatever kind of tensor they are"""
    x = common.randn(70, 2, 4, 6)
    pe = ref.sinusoidal_encoding(4, 6)                          # n == L: a view of pe would alias
    _expect_adds(student, x, pe)
    expect_inputs_unchanged(support, student.positional.add_positional_encoding,
                            "positional.add_positional_encoding", [x, pe], ["x", "pe"], kind)


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", _kinds("LearnedPositionalEmbedding.forward"))
@pytest.mark.contract("conventions/inputs")
def test_learned_leaves_input_unchanged(student, support, kind):
    """LearnedPositionalEmbedding.forward leaves x unchanged, whatever kind of tensor it is"""
    module = _loaded_and_right(student, support, 72)
    expect_inputs_unchanged(support, module, "LearnedPositionalEmbedding.forward",
                            [common.randn(71, 2, 5, 6)], ["x"], kind)


@pytest.mark.covers("LearnedPositionalEmbedding", "LearnedPositionalEmbedding.forward:device")
@pytest.mark.points(0.25)
@pytest.mark.contract("conventions/device")
def test_learned_on_meta(student, support):
    """LearnedPositionalEmbedding.forward keeps the device (module and x on meta)"""
    _loaded_and_right(student, support, 74)            # judged on a module whose forward is right …
    module, _ = common.learned_module(student, support, 74, 8, 6)   # … with one whose first call is on meta (as built)
    expect_on_meta(support, module, "LearnedPositionalEmbedding(8, 6)(x)", [common.randn(73, 2, 5, 6)],
                   outputs=["output"], dtype="float32", shapes=[(2, 5, 6)])


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", _kinds("plot_encoding", ("ndarray", "tensor", "shared", "grad")))
@pytest.mark.contract("conventions/inputs")
def test_plot_leaves_table_unchanged(student, support, kind):
    """plot_encoding leaves the table it draws unchanged, whatever kind of array or tensor it is"""
    pe = ref.sinusoidal_encoding(6, 4)
    common.expect_shows(common.draw(student, support, pe), pe, "plot_encoding(pe)")   # it draws the table
    try:
        expect_inputs_unchanged(support, student.positional.plot_encoding, "positional.plot_encoding",
                                [pe], ["pe"], kind)
    finally:
        support.modules.close_all()


# --------------------------------------------------------------------------- judged on right answers

def _expect_adds(student, x, pe) -> None:
    """The rule is judged on a function that adds: x + pe[:n] for plain tensors first."""
    with checks.calling("positional.add_positional_encoding"):
        got = student.positional.add_positional_encoding(x, pe)
    common.expect_sum(got, x, pe, "add_positional_encoding(x, pe)", torch.float32)


def _loaded_and_right(student, support, offset: int):
    """LearnedPositionalEmbedding(8, 6) with hidden weights loaded, whose forward is right on a
    plain tensor: the rules are judged on a module that adds its table."""
    module, table = common.learned_module(student, support, offset, 8, 6)
    x = common.randn(offset + 1, 2, 5, 6)
    with checks.calling("LearnedPositionalEmbedding.forward"):
        common.expect_learned(module(x), x, table,
                              "LearnedPositionalEmbedding(8, 6)(x)")
    return module
