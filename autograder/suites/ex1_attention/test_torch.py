"""ex1 · scaled_dot_product_attention (PyTorch): values, dtypes, masks, autograd, inputs left alone."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import reference.attention as ref
from autograder.diagnosis import ex1 as mistakes
from autograder.diagnosis.causes import General
from autograder.suites import checks, contract_rules
from autograder.suites.ex1_attention import common

pytestmark = pytest.mark.covers("scaled_dot_product_attention")

NAME = "scaled_dot_product_attention"
DTYPES = [torch.float32, torch.float64]
IDS = ["float32", "float64"]


def _expected(Q, K, V, mask=None, got=None):
    """Reference result computed in float64 from the same values; for float64 inputs, the
    one of the accepted scales (float64, or held in float32: ``common.float32_scale_factors``)
    closest to the student's output ``got``."""
    up = [t.detach().to(torch.float64) for t in (Q, K, V)]
    want = ref.scaled_dot_product_attention(*up, mask)
    if Q.dtype != torch.float64 or not _comparable(got, want[0]):
        return want
    scaled = [ref.scaled_dot_product_attention(c * up[0], *up[1:], mask)
              for c in common.float32_scale_factors(Q.shape[-1])]
    return min([want, *scaled], key=lambda w: float((got.detach().double() - w[0]).abs().max()))


def _comparable(got, want: torch.Tensor) -> bool:
    return isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape) \
        and got.dtype == torch.float64 and bool(torch.isfinite(got).all())


def _check(student, Q, K, V, mask=None):
    dtype = Q.dtype
    named = {"Q": Q, "K": K, "V": V, **({} if mask is None else {"mask": mask})}
    inputs = checks.describe_inputs(**named) + f", dtype {str(dtype).removeprefix('torch.')}"
    args = (Q, K, V) if mask is None else (Q, K, V, mask)
    out, w = checks.expect_tuple(getattr(student.attention, NAME)(*args), 2, f"{NAME}(…)")
    checks.expect_type(out, torch.Tensor, "output")
    checks.expect_type(w, torch.Tensor, "weights")
    want_out, want_w = _expected(Q, K, V, mask, got=out)
    rtol, atol = checks.tolerance(dtype)
    checks.expect_output_and_weights(out, w, want_out, want_w, inputs, rtol=rtol, atol=atol,
                                     dtype=dtype,
                                     mistakes=lambda which: mistakes.forward(Q, K, V, mask, which))
    return out, w, inputs


@pytest.mark.points(1.25)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.contract("scaled_dot_product_attention/torch", "conventions/dtype")
@pytest.mark.covers("scaled_dot_product_attention:dtype/float32", "scaled_dot_product_attention:dtype/float64", "scaled_dot_product_attention:lead/1")
def test_torch_values_and_dtype(student, dtype):
    """torch attention matches the reference and keeps the dtype"""
    Q, K, V = common.to_torch(*common.qkv(40, (2,), n=4, m=6, d_k=5, d_v=3), dtype=dtype)
    _check(student, Q, K, V)


@pytest.mark.points(1)
@pytest.mark.contract("scaled_dot_product_attention/torch", "scaled_dot_product_attention_np/shapes")
@pytest.mark.covers("scaled_dot_product_attention:lead/0", "scaled_dot_product_attention:lead/several")
def test_torch_unbatched_and_leading_dims(student):
    """torch attention on unbatched inputs and on two leading dims"""
    Q, K, V = common.to_torch(*common.qkv(41, (), n=3, m=2, d_k=4, d_v=5))
    _check(student, Q, K, V)
    Q, K, V = common.to_torch(*common.qkv(42, (2, 3), n=2, m=4, d_k=3, d_v=2), dtype=torch.float32)
    _check(student, Q, K, V)


@pytest.mark.points(1.25)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.contract("scaled_dot_product_attention/torch", "conventions/masks", "conventions/mask-shapes")
@pytest.mark.covers("scaled_dot_product_attention:mask/(n, m)", "scaled_dot_product_attention:mask/(B, 1, m)")
def test_torch_masks(student, dtype):
    """torch attention with broadcast boolean masks: masked weights exactly 0"""
    Q, K, V = common.to_torch(*common.qkv(43, (2,), n=4, m=5, d_k=3, d_v=4), dtype=dtype)
    for i, shape in enumerate([(4, 5), (2, 1, 5)]):
        mask = torch.from_numpy(common.mask(43 + i, shape))
        _, w, inputs = _check(student, Q, K, V, mask)
        common.expect_masked_zero(w, mask.numpy(), "weights", inputs)


@pytest.mark.points(1.5)
@pytest.mark.parametrize("masked", [False, True], ids=["no mask", "mask"])
@pytest.mark.contract("conventions/differentiable")
@pytest.mark.covers("scaled_dot_product_attention:grad")
def test_torch_differentiable(student, support, masked):
    """torch attention is differentiable: gradients w.r.t. Q, K, V match the reference"""
    Q, K, V = common.to_torch(*common.qkv(44 + masked, (2,), n=3, m=4, d_k=5, d_v=2))
    mask = torch.from_numpy(common.mask(44, (3, 4))) if masked else None
    g_out = torch.tensor(common.rng(46 + masked).normal(size=(2, 3, 2)))
    args = [Q, K, V] + ([mask] if masked else [])
    inputs = checks.describe_inputs(Q=Q, K=K, V=V, **({"mask": mask} if masked else {}))
    with checks.calling(f"attention.{NAME}"):
        res = support.autograd.grads(getattr(student.attention, NAME), args, {}, [g_out, None], [0, 1, 2])
    if len(res["requires_grad"]) != 2:
        checks.fail(f"{NAME}: expected (output, weights), got {len(res['requires_grad'])} values")
    for attached, name in zip(res["requires_grad"], ("output", "weights")):
        if not attached:
            checks.fail(f"{NAME}: the returned {name} came back with requires_grad=False although "
                        f"Q, K, V require grad: it is cut off from autograd; do not use .detach(), "
                        f".numpy(), .item() or torch.no_grad() on the computation path ({inputs})",
                        cause=General.DETACHED)
    if res["error"]:
        checks.fail(f"{NAME}: backpropagating through your result failed: {res['error']} ({inputs})")
    # expected: the reference's analytic backward (itself checked against torch autograd in the
    # kit's tests); no autograd in the grading process, which forks sandbox workers
    want = _expected_gradients(g_out, Q, K, V, mask, res["grads"])
    for name, got, exp in zip(("dQ", "dK", "dV"), res["grads"], want):
        if got is None:
            checks.fail(f"{NAME}: no gradient reaches {name[1:]} ({inputs})")
        checks.expect_close(got, exp, f"gradient {name} of sum(g·output)", inputs=inputs,
                            rtol=1e-6, atol=1e-9)


def _expected_gradients(g_out, Q, K, V, mask, got) -> tuple[np.ndarray, ...]:
    """(dQ, dK, dV) of sum(g·output) from the reference's analytic backward, with the scale
    (float64, or held in float32) closest to the student's gradients ``got``: attention of
    (c·Q, K, V) has dQ = c·(its gradient w.r.t. c·Q)."""
    mask_np = None if mask is None else mask.numpy()
    candidates = [ref.attention_backward_np(g_out.numpy(), Q.numpy(), K.numpy(), V.numpy(), mask_np)]
    for c in common.float32_scale_factors(Q.shape[-1]):
        dQ, dK, dV = ref.attention_backward_np(g_out.numpy(), c * Q.numpy(), K.numpy(), V.numpy(), mask_np)
        candidates.append((c * dQ, dK, dV))
    if not all(isinstance(g, torch.Tensor) and tuple(g.shape) == w.shape for g, w in zip(got, candidates[0])):
        return candidates[0]
    return min(candidates, key=lambda want: max(float(np.abs(g.detach().double().numpy() - w).max())
                                                for g, w in zip(got, want)))


@pytest.mark.covers("scaled_dot_product_attention:inputs", "scaled_dot_product_attention")   # a crash fails it too: "(and runs)"
@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/inputs")
@pytest.mark.covers("scaled_dot_product_attention:inputs/tensor")
def test_torch_leaves_inputs_unchanged(student, support):
    """torch attention does not modify Q, K, V or the mask (and runs)"""
    Q, K, V = common.to_torch(*common.qkv(48, (2,), n=3, m=4, d_k=2, d_v=3))
    mask = torch.from_numpy(common.mask(48, (3, 4)))
    with checks.calling(f"attention.{NAME}"):
        result, changes = contract_rules.call_and_check_unchanged(support, getattr(student.attention, NAME),
                                                                  [Q, K, V, mask])
    common.expect_unchanged(changes, ["Q", "K", "V", "mask"], NAME)
    checks.expect_all_finite(result, f"{NAME}(…)", checks.describe_inputs(Q=Q, K=K, V=V, mask=mask))    # values: the other tests
