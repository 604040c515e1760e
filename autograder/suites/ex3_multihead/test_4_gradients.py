"""ex3 · gradients: every parameter receives the reference gradient through the student's forward."""
from __future__ import annotations

import pytest
import torch

from autograder import seeds
from autograder.diagnosis.causes import Cause
from autograder.suites.ex3_multihead.causes import Ex3Cause
from autograder.suites.checks import describe_inputs, expect_close, fail
from autograder.suites.ex3_multihead.common import B, D_MODEL, N, M, inputs, random_mask, reference_model

pytestmark = pytest.mark.covers("MultiHeadAttention")

NAMES = [f"{p}.{kind}" for p in ("W_q", "W_k", "W_v", "W_o") for kind in ("weight", "bias")]


def _dead_cause(dead: list[str]) -> Cause | None:
    """Which mistake leaves exactly these parameters without a gradient: W_o alone, the output
    projection not applied; one of W_q, W_k, W_v alone, another projection used in its place or
    its output detached (the forward tests tell which: none named here); more, something on the
    path detached or several projections unused."""
    projections = sorted({n.split(".")[0] for n in dead})
    if projections == ["W_o"]:
        return Ex3Cause.NO_W_O
    if len(projections) == 1:
        return None
    return Ex3Cause.PARAMETERS_WITHOUT_GRADIENT


@pytest.mark.points(2.5)
@pytest.mark.contract("conventions/differentiable", "MultiHeadAttention.forward/formula")
@pytest.mark.covers("MultiHeadAttention.forward:grad")
def test_gradients_reach_every_parameter(mha, state, support):
    """gradients reach every parameter and match the reference"""
    q, k, v = inputs(5201)
    mask = random_mask((N, M), seed=5202)
    g = seeds.generator(5203)
    weight = torch.randn(B, N, D_MODEL, generator=g)
    grads = support.modules.parameter_grads(mha, [q, k, v, mask], {}, weight, 0)
    missing = [n for n in NAMES if n not in grads]
    if missing:
        fail(f"the module has no parameter(s) {missing[:8]}")
    dead = [n for n in NAMES if grads[n] is None]
    if dead:
        fail("sum(output · w).backward() left no gradient on " + ", ".join(dead)
             + ": something on the path is detached (.detach(), .numpy(), .item(), "
               "torch.tensor(...) of an intermediate) or the parameter is not used", _dead_cause(dead))
    model = reference_model(state)
    out, _ = model(q.double(), k.double(), v.double(), mask)
    (out * weight.double()).sum().backward()
    want = dict(model.named_parameters())
    shown = describe_inputs(query=q, key=k, value=v, mask=mask)
    for name in NAMES:
        expect_close(grads[name], want[name].grad, f"the gradient of sum(output · w) w.r.t. {name}",
                     inputs=shown, rtol=1e-3, atol=1e-4)
