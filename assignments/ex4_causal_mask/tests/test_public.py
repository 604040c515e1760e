# Public tests of ex4, a copy shipped with the release. Run them from anywhere in the
# release: `python check.py` in ex4_causal_mask/ (or `python check.py ex4` in the release
# folder), `pytest` in ex4_causal_mask/, or the last cell of ex4_causal_mask.ipynb. They need the
# release's autograder/ folder (the fixtures `student` and `support` come from it).
"""ex4 · public tests: invariants and small hand-checkable values (shipped to students).

Run them with ``python -m autograder check ex4`` in the folder that holds causal.py.
The hidden tests check much more (values against a reference, float32/float64,
gradients, decoding with a cache, ties in generation).
"""
from __future__ import annotations

import pytest
import torch

from autograder.suites.ex4_causal_mask.causes import Ex4Cause
from autograder.diagnosis.causes import General
from autograder.suites.checks import expect_tuple, expect_type, fail


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("create_causal_mask/pattern")
def test_public_causal_mask_3x3(student):
    """create_causal_mask(3) is the boolean lower triangle"""
    got = student.causal.create_causal_mask(3)
    want = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    expect_type(got, torch.Tensor, "create_causal_mask(3)")
    if got.dtype != torch.bool:
        fail(f"expected a torch.bool tensor, got {got.dtype}", General.MASK_NOT_BOOL)
    assert tuple(got.shape) == (3, 3), f"expected shape (3, 3), got {tuple(got.shape)}"
    if not torch.equal(got, want):
        ones = torch.ones(3, 3, dtype=torch.bool)
        known = {Ex4Cause.STRICT: ones.tril(-1), Ex4Cause.MASK_UPPER_TRIANGULAR: ones.triu(),
                 Ex4Cause.MASK_MARKS_FUTURE: ~ones.tril()}
        fail(f"create_causal_mask(3) gave {got.tolist()}, expected {want.tolist()} (mask[i, j] = j <= i)",
             next((cause for cause, wrong in known.items() if torch.equal(got, wrong)), None))


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("create_padding_mask/pattern", "combine_masks/pattern")
def test_public_padding_and_combined_masks(student):
    """create_padding_mask and combine_masks on a 2-sequence batch (each checked on its own)"""
    pad = student.causal.create_padding_mask(torch.tensor([2, 3]), 3)
    expect_type(pad, torch.Tensor, "create_padding_mask(lengths, 3)")
    want_pad = torch.tensor([[True, True, False], [True, True, True]])
    assert tuple(pad.shape) == (2, 3), f"create_padding_mask(tensor([2, 3]), 3): expected shape (2, 3), got {tuple(pad.shape)}"
    if not torch.equal(pad, want_pad):
        wrong = {Ex4Cause.PADDING_LESS_EQUAL: torch.ones(2, 3, dtype=torch.bool),     # j <= lengths[b]
                 Ex4Cause.PADDING_INVERTED: ~want_pad}
        fail(f"create_padding_mask(tensor([2, 3]), 3) gave {pad.tolist()}, expected {want_pad.tolist()}",
             next((cause for cause, mask in wrong.items() if torch.equal(pad, mask)), None))
    causal = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])   # built here
    both = student.causal.combine_masks(causal, want_pad)
    expect_type(both, torch.Tensor, "combine_masks(causal, padding)")
    assert tuple(both.shape) == (2, 3, 3), f"combine_masks: expected shape (2, 3, 3), got {tuple(both.shape)}"
    want = causal[None, :, :] & want_pad[:, None, :]
    if not torch.equal(both, want):
        wrong = {Ex4Cause.COMBINE_PADS_QUERIES: causal[None, :, :] & want_pad[:, :, None],
                 Ex4Cause.COMBINE_OR: causal[None, :, :] | want_pad[:, None, :]}
        fail(f"combine_masks(causal 3×3 lower triangle, padding {want_pad.tolist()}) gave {both.tolist()}, "
             f"expected {want.tolist()}", next((cause for cause, mask in wrong.items() if torch.equal(both, mask)), None))


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("causal_self_attention")
def test_public_no_future_leak(student):
    """causal_self_attention: changing the last token does not change earlier outputs"""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 4, 3, generator=g)
    W_q, W_k, W_v = (torch.randn(3, 3, generator=g) for _ in range(3))
    out, w = expect_tuple(student.causal.causal_self_attention(x, W_q, W_k, W_v), 2,
                          "causal_self_attention(x, W_q, W_k, W_v)")
    expect_type(out, torch.Tensor, "the output")
    expect_type(w, torch.Tensor, "the weights")
    assert tuple(out.shape) == (1, 4, 3) and tuple(w.shape) == (1, 4, 4), \
        f"got output {tuple(out.shape)} and weights {tuple(w.shape)}, expected (1, 4, 3) and (1, 4, 4)"
    w = w.detach()
    if torch.isnan(w).any():
        rows = torch.isnan(w[0]).any(-1)                 # which query rows lost every key
        fail("weights contain NaN: a row where every key is masked? position i may attend to j <= i, itself included",
             Ex4Cause.STRICT if rows[0] and not rows[-1] else Ex4Cause.BLOCKS_TRUE if rows[-1] and not rows[0]
             else None)
    if not (w[0].triu(1) == 0).all():
        upper = bool((w[0].tril(-1) == 0).all())        # the past hidden, the future seen
        fail("weights above the diagonal must be exactly 0", Ex4Cause.INVERTED if upper else None)
    x2 = x.clone()
    x2[:, 3] += 5.0
    out2, _ = expect_tuple(student.causal.causal_self_attention(x2, W_q, W_k, W_v), 2,
                           "causal_self_attention(x2, W_q, W_k, W_v)")
    assert torch.allclose(out[:, :3], out2[:, :3]), \
        "outputs of positions 0-2 changed when only position 3 did (expected them unchanged)"


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("attend_next")
def test_public_attend_next_single_key(student):
    """attend_next with one cached position returns that position's value"""
    q = torch.tensor([[1.0, 2.0]])
    K = torch.tensor([[[0.5, -1.0]]])
    V = torch.tensor([[[3.0, 4.0, 5.0]]])
    out, w = expect_tuple(student.causal.attend_next(q, K, V), 2, "attend_next(q, K_cache, V_cache)")
    expect_type(out, torch.Tensor, "the output")
    expect_type(w, torch.Tensor, "the weights")
    assert tuple(out.shape) == (1, 3) and tuple(w.shape) == (1, 1), \
        f"got output {tuple(out.shape)} and weights {tuple(w.shape)}, expected (1, 3) and (1, 1)"
    assert torch.allclose(w, torch.ones(1, 1)) and torch.allclose(out, V[:, 0]), \
        (f"with a single cached position its weight is 1 and the output is its value: expected weights "
         f"[[1.0]] and output {V[:, 0].tolist()}, got {w.tolist()} and {out.tolist()}")


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("greedy_generate/argmax", "greedy_generate/result", "greedy_generate/signature")
def test_public_greedy_generate_first_step(student, support):
    """greedy_generate keeps the prompt and appends the argmax of the last position"""
    model = support.lm.build(vocab_size=7, seed=0)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    ids = student.causal.greedy_generate(model, prompt, 2)
    expect_type(ids, torch.Tensor, "greedy_generate(model, prompt, 2)")
    assert tuple(ids.shape) == (2, 5), f"expected shape (2, 5), got {tuple(ids.shape)}"
    assert ids.dtype == torch.long, f"expected dtype torch.long, got {ids.dtype}"
    assert torch.equal(ids[:, :3], prompt), f"the result must start with the prompt {prompt.tolist()}, got {ids.tolist()}"
    first = model(prompt)[:, -1, :].argmax(dim=-1)
    assert torch.equal(ids[:, 3], first), \
        f"token 4 should be the argmax of the last position's logits, {first.tolist()}; got {ids[:, 3].tolist()}"
