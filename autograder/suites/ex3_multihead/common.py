"""ex3 hidden suite: fixed inputs, reference weights, and the comparisons shared by tests.

Reference values come from ``reference.multihead`` run in float64 in the grader, with the
same weights the student's module receives through ``load_state_dict``. Every ``seed``
argument below is an offset into the current test's derived seeds (``autograder.seeds``),
or a name for a session fixture's.
"""
from __future__ import annotations

import copy

import torch

import reference.multihead as ref
from autograder import seeds
from autograder.diagnosis import ex3 as mistakes
from autograder.suites.checks import (describe_inputs, expect_all_finite, expect_close, expect_shape,
                                      expect_tuple, fail)

D_MODEL, HEADS = 12, 3          # d_head = 4: √d_head = 2 and √d_model ≈ 3.46 differ clearly
B, N, M = 2, 4, 6               # n != m so that cross-attention shapes show


def reference_state(seed: int | str, bias: bool = True, d_model: int = D_MODEL,
                    heads: int = HEADS) -> dict[str, torch.Tensor]:
    """A float32 state dict of the reference module, seeded (and a little sharper than
    the default init so that the heads' weights are far from uniform)."""
    torch.manual_seed(seeds.seed(name=seed) if isinstance(seed, str) else seeds.seed(seed))
    model = ref.MultiHeadAttention(d_model, heads, bias=bias)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(("W_q", "W_k")) and name.endswith("weight"):
                p.mul_(2.0)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def reference_model(state: dict[str, torch.Tensor], heads: int = HEADS) -> ref.MultiHeadAttention:
    d_model = state["W_q.weight"].shape[0]
    model = ref.MultiHeadAttention(d_model, heads, bias="W_q.bias" in state).double()
    model.load_state_dict({k: v.to(torch.float64) for k, v in state.items()})
    return model


def inputs(seed: int | str, n: int = N, m: int = M, dtype=torch.float32, batch: int = B,
           d_model: int = D_MODEL):
    g = seeds.generator(name=seed) if isinstance(seed, str) else seeds.generator(seed)
    q = 1.5 * torch.randn(batch, n, d_model, generator=g, dtype=torch.float64)
    k = 1.5 * torch.randn(batch, m, d_model, generator=g, dtype=torch.float64)
    v = 1.5 * torch.randn(batch, m, d_model, generator=g, dtype=torch.float64)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def random_mask(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Boolean mask whose every row (last axis) has at least one True and one False."""
    rng = seeds.rng(seed)
    mask = rng.random(shape) < 0.6
    rows = mask.reshape(-1, shape[-1])
    for r in range(rows.shape[0]):
        a, b = rng.choice(shape[-1], size=2, replace=False)
        rows[r, a], rows[r, b] = True, False
    return torch.from_numpy(rows.reshape(shape).copy())


def padding_mask(lengths: list[int], m: int) -> torch.Tensor:
    """(B, 1, 1, m): True at key positions < length."""
    return (torch.arange(m)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


def expect_forward(got, state, query, key, value, mask, what: str,
                   parts: tuple[str, ...] = ("weights", "output"), heads: int = HEADS) -> None:
    """Compare the student's (output, weights) with the reference, weights first."""
    output, weights = expect_tuple(got, 2, what + " (should return (output, weights))")
    B_, n, _ = query.shape
    m = key.shape[1]
    shown = describe_inputs(query=query, key=key, value=value,
                            **({"mask": mask} if mask is not None else {}))
    if "output" in parts:
        expect_shape(output, (B_, n, query.shape[-1]), f"{what}: output", shown)
    if "weights" in parts:
        if hasattr(weights, "shape") and tuple(weights.shape) in ((B_, n, m), (B_, heads, n, n)) \
                and tuple(weights.shape) != (B_, heads, n, m):
            fail(f"{what}: weights: expected shape {(B_, heads, n, m)}, got {tuple(weights.shape)} "
                 f"(inputs: {shown})", mistakes.weights_shape_cause(
                     tuple(weights.shape), state, heads, query, key, value, mask, weights))
        expect_shape(weights, (B_, heads, n, m), f"{what}: weights", shown)
    want_out, want_w = reference_model(state, heads)(query.double(), key.double(), value.double(), mask)
    float64 = query.dtype == torch.float64
    rtol, atol = (1e-7, 1e-9) if float64 else (1e-4, 2e-5)
    if "weights" in parts:
        expect_close(weights, want_w, f"{what}: weights", inputs=shown, rtol=rtol, atol=atol,
                     mistakes=lambda: mistakes.forward_mistakes(state, heads, query, key, value,
                                                                mask, which="weights"))
    if "output" in parts:
        expect_close(output, want_out, f"{what}: output", inputs=shown, rtol=rtol, atol=atol,
                     mistakes=lambda: mistakes.forward_mistakes(state, heads, query, key, value,
                                                                mask, which="output"))


def perturbed_state(state: dict[str, torch.Tensor], head: int, seed: int,
                    heads: int = HEADS) -> dict[str, torch.Tensor]:
    """``state`` with the query projection rows of one head (its output features) changed."""
    new = copy.deepcopy(state)
    d_head = new["W_q.weight"].shape[0] // heads
    g = seeds.generator(seed)
    rows = slice(head * d_head, (head + 1) * d_head)
    new["W_q.weight"][rows] += 0.8 * torch.randn(new["W_q.weight"][rows].shape, generator=g)
    return new


def expect_uses_loaded_weights(support, model, what: str, d_model: int, heads: int, bias: bool = True) -> None:
    """``model`` (a student module in the worker) loads two different reference states and
    gives finite outputs that differ between them: its forward really uses the weights it
    was given (a no-op ``load_state_dict`` or a forward that ignores them fails). The
    comparison is made here, in the grader."""
    q, k, v = inputs("loaded weights", n=3, m=4, batch=1, d_model=d_model)
    shown = describe_inputs(query=q, key=k, value=v)
    outputs = []
    for which in ("loaded weights A", "loaded weights B"):
        support.modules.load_weights(model, reference_state(which, bias=bias, d_model=d_model, heads=heads))
        output, weights = expect_tuple(model(q, k, v), 2, f"{what}: forward (should return (output, weights))")
        expect_shape(output, (1, 3, d_model), f"{what}: output", shown)
        expect_all_finite((output, weights), f"{what}: forward(query, key, value)", shown)
        outputs.append(output.detach().double())
    if not float((outputs[0] - outputs[1]).abs().max()) > 1e-6:
        fail(f"{what}: the output did not change when load_state_dict gave the module different "
             "weights: forward must use the loaded W_q, W_k, W_v and W_o (do not replace or "
             "re-create them after __init__, and do not override load_state_dict)")
