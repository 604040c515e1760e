"""The ex4 oracle against brute-force loops and torch's fused causal attention."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from reference import causal as ref


@pytest.mark.parametrize("n", [1, 2, 5])
def test_causal_mask_by_loops(n):
    mask = ref.create_causal_mask(n)
    assert mask.dtype == torch.bool and mask.shape == (n, n)
    assert [[bool(mask[i, j]) for j in range(n)] for i in range(n)] == \
           [[j <= i for j in range(n)] for i in range(n)]
    assert ref.create_causal_mask(n, device="cpu").device.type == "cpu"


def test_padding_mask_by_loops():
    lengths = torch.tensor([3, 1, 5, 0])
    mask = ref.create_padding_mask(lengths, 5)
    assert mask.dtype == torch.bool and mask.shape == (4, 5)
    assert mask.tolist() == [[j < int(L) for j in range(5)] for L in lengths]


def test_combine_masks_by_loops():
    causal = ref.create_causal_mask(4)
    padding = ref.create_padding_mask(torch.tensor([4, 2, 3]), 4)
    combined = ref.combine_masks(causal, padding)
    assert combined.dtype == torch.bool and combined.shape == (3, 4, 4)
    for b in range(3):
        for i in range(4):
            for j in range(4):
                assert bool(combined[b, i, j]) == (j <= i and j < [4, 2, 3][b])


def _attention_loops(Q, K, V):
    """Causal attention for one sequence by explicit loops (float64 Python arithmetic)."""
    n, d_k = Q.shape
    out, weights = [], []
    for i in range(n):
        s = [sum(float(Q[i, c]) * float(K[j, c]) for c in range(d_k)) / math.sqrt(d_k) for j in range(i + 1)]
        top = max(s)
        e = [math.exp(v - top) for v in s]
        w = [v / sum(e) for v in e] + [0.0] * (n - i - 1)
        weights.append(w)
        out.append([sum(w[j] * float(V[j, c]) for j in range(n)) for c in range(V.shape[1])])
    return torch.tensor(out, dtype=torch.float64), torch.tensor(weights, dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("B,n,d_model,d_k,d_v", [(2, 5, 6, 4, 3), (1, 1, 3, 2, 2), (3, 4, 4, 4, 5)])
def test_causal_self_attention(dtype, B, n, d_model, d_k, d_v):
    g = torch.Generator().manual_seed(n * 10 + d_v)
    x = torch.randn(B, n, d_model, generator=g, dtype=dtype)
    W_q, W_k = torch.randn(d_model, d_k, generator=g, dtype=dtype), torch.randn(d_model, d_k, generator=g, dtype=dtype)
    W_v = torch.randn(d_model, d_v, generator=g, dtype=dtype)
    out, w = ref.causal_self_attention(x, W_q, W_k, W_v)
    assert out.shape == (B, n, d_v) and w.shape == (B, n, n) and out.dtype == dtype == w.dtype
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    fused = F.scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v, is_causal=True)
    torch.testing.assert_close(out, fused, **tol)
    for b in range(B):
        lo, lw = _attention_loops((x[b] @ W_q).double(), (x[b] @ W_k).double(), (x[b] @ W_v).double())
        torch.testing.assert_close(out[b].double(), lo, **tol)
        torch.testing.assert_close(w[b].double(), lw, **tol)
    assert torch.all(w.triu(diagonal=1) == 0)


def test_causal_self_attention_is_differentiable():
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    Ws = [torch.randn(4, d, dtype=torch.float64, requires_grad=True) for d in (2, 2, 3)]
    assert torch.autograd.gradcheck(lambda *a: ref.causal_self_attention(*a), (x, *Ws))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_attend_next_equals_rows_of_causal_attention(dtype):
    g = torch.Generator().manual_seed(3)
    B, n, d_model, d_k, d_v = 2, 6, 5, 3, 4
    x = torch.randn(B, n, d_model, generator=g, dtype=dtype)
    W_q, W_k, W_v = (torch.randn(d_model, d, generator=g, dtype=dtype) for d in (d_k, d_k, d_v))
    full_out, full_w = ref.causal_self_attention(x, W_q, W_k, W_v)
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    for t in range(1, n + 1):
        out, w = ref.attend_next(Q[:, t - 1], K[:, :t], V[:, :t])
        assert out.shape == (B, d_v) and w.shape == (B, t) and out.dtype == dtype
        torch.testing.assert_close(out, full_out[:, t - 1], **tol)
        torch.testing.assert_close(w, full_w[:, t - 1, :t], **tol)
        for b in range(B):       # brute force: the last row of loop attention over t positions
            lo, lw = _attention_loops(Q[b, :t].double(), K[b, :t].double(), V[b, :t].double())
            torch.testing.assert_close(out[b].double(), lo[t - 1], **tol)


class TableLM(torch.nn.Module):
    """logits[b, s] = table[ids[b, s]] + bonus[s]: causal, tiny, with planted ties."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.tensor([
            [0.0, 3.0, 3.0, 1.0],   # after 0: tie between 1 and 2 -> 1
            [2.0, 2.0, 2.0, 2.0],   # after 1: all tied -> 0
            [1.0, 0.0, 5.0, 5.0],   # after 2: tie between 2 and 3 -> 2 (repeats forever)
            [4.0, 9.0, 0.0, 9.0],   # after 3: tie between 1 and 3 -> 1
        ]))
        self.grad_enabled_calls = []

    def forward(self, ids):
        self.grad_enabled_calls.append(torch.is_grad_enabled())
        return self.table[ids]                                   # (B, t, vocab)


def _greedy_loops(model, prompt, steps):
    seqs = [list(map(int, row)) for row in prompt]
    for _ in range(steps):
        logits = model(torch.tensor(seqs)).tolist()
        for b, seq in enumerate(seqs):
            last = logits[b][-1]
            best = 0
            for j in range(len(last)):                           # strict > keeps the first max
                if last[j] > last[best]:
                    best = j
            seq.append(best)
    return torch.tensor(seqs)


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_greedy_generate_matches_loop_with_ties(steps):
    prompt = torch.tensor([[3, 0], [1, 1], [0, 2], [2, 3]])
    before = prompt.clone()
    model = TableLM()
    got = ref.greedy_generate(model, prompt, steps)
    assert got.shape == (4, 2 + steps) and got.dtype == prompt.dtype
    torch.testing.assert_close(got[:, :2], prompt, rtol=0, atol=0)
    torch.testing.assert_close(got, _greedy_loops(TableLM(), prompt, steps), rtol=0, atol=0)
    torch.testing.assert_close(prompt, before, rtol=0, atol=0)
    assert not any(model.grad_enabled_calls)                    # model run under no_grad
    if steps >= 1:
        assert got[:, 2].tolist() == [1, 0, 2, 1]               # the planted ties, by hand
