"""The ex3 oracle against torch.nn.MultiheadAttention (copied weights) and index loops."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from reference import multihead as ref


def test_split_heads_by_index():
    B, n, d_model, h = 2, 3, 8, 4
    x = torch.randn(B, n, d_model)
    y = ref.split_heads(x, h)
    d_head = d_model // h
    assert y.shape == (B, h, n, d_head)
    for b in range(B):
        for i in range(h):
            for t in range(n):
                for f in range(d_head):
                    assert y[b, i, t, f] == x[b, t, i * d_head + f]


@pytest.mark.parametrize("shape,h", [((2, 3, 8), 4), ((1, 5, 6), 3), ((3, 1, 4), 1), ((2, 4, 6), 6)])
def test_combine_heads_inverts_split_heads(shape, h):
    x = torch.randn(*shape)
    y = ref.split_heads(x, h)
    assert ref.combine_heads(y).shape == x.shape
    torch.testing.assert_close(ref.combine_heads(y), x, rtol=0, atol=0)
    z = torch.randn(shape[0], h, shape[1], shape[2] // h)
    torch.testing.assert_close(ref.split_heads(ref.combine_heads(z), h), z, rtol=0, atol=0)


def test_rejects_indivisible_d_model():
    with pytest.raises(ValueError):
        ref.MultiHeadAttention(10, 3)


@pytest.mark.parametrize("bias", [True, False])
def test_exact_submodules_and_parameters(bias):
    mha = ref.MultiHeadAttention(8, 2, bias=bias)
    assert set(dict(mha.named_children())) == {"W_q", "W_k", "W_v", "W_o"}
    for name in ("W_q", "W_k", "W_v", "W_o"):
        layer = getattr(mha, name)
        assert isinstance(layer, nn.Linear) and layer.in_features == layer.out_features == 8
        assert (layer.bias is not None) == bias
    expected = {f"{w}.weight" for w in ("W_q", "W_k", "W_v", "W_o")}
    if bias:
        expected |= {f"{w}.bias" for w in ("W_q", "W_k", "W_v", "W_o")}
    assert set(dict(mha.named_parameters())) == expected


def _torch_mha_like(mha: ref.MultiHeadAttention, bias: bool) -> nn.MultiheadAttention:
    d, h = mha.W_q.in_features, mha.num_heads
    t = nn.MultiheadAttention(d, h, bias=bias, batch_first=True)
    t = t.to(mha.W_q.weight.dtype)
    with torch.no_grad():
        t.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]))
        t.out_proj.weight.copy_(mha.W_o.weight)
        if bias:
            t.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
            t.out_proj.bias.copy_(mha.W_o.bias)
    return t.eval()


def _mask(kind, B, h, n, m, gen):
    """Our mask (True = attend) for a given kind, at least one True per row."""
    if kind is None:
        return None
    if kind == "nm":                                    # (n, m): lower-triangular-ish
        return torch.ones(n, m, dtype=torch.bool).tril(diagonal=max(0, m - n))
    if kind == "B11m":                                  # key padding (B, 1, 1, m)
        lengths = torch.randint(1, m + 1, (B,), generator=gen)
        return (torch.arange(m)[None, :] < lengths[:, None])[:, None, None, :]
    full = torch.rand(B, h, n, m, generator=gen) < 0.5  # (B, h, n, m)
    full[..., 0] = True
    return full


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mask_kind", [None, "nm", "B11m", "full"])
@pytest.mark.parametrize("n,m", [(4, 4), (3, 6)])
def test_matches_torch_multihead_attention(dtype, bias, mask_kind, n, m):
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(1)
    B, d, h = 2, 12, 3
    mha = ref.MultiHeadAttention(d, h, bias=bias).to(dtype)
    theirs = _torch_mha_like(mha, bias)
    q = torch.randn(B, n, d, dtype=dtype, generator=gen)
    k = torch.randn(B, m, d, dtype=dtype, generator=gen)
    v = torch.randn(B, m, d, dtype=dtype, generator=gen)
    mask = _mask(mask_kind, B, h, n, m, gen)
    out, w = mha(q, k, v, mask)
    assert out.shape == (B, n, d) and w.shape == (B, h, n, m) and out.dtype == dtype

    kwargs = dict(need_weights=True, average_attn_weights=False)
    if mask_kind == "nm":
        kwargs["attn_mask"] = ~mask                     # torch: True = NOT allowed
    elif mask_kind == "B11m":
        kwargs["key_padding_mask"] = ~mask[:, 0, 0, :]
    elif mask_kind == "full":
        kwargs["attn_mask"] = ~mask.reshape(B * h, n, m)
    with torch.no_grad():
        t_out, t_w = theirs(q, k, v, **kwargs)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(out.detach(), t_out, **tol)
    torch.testing.assert_close(w.detach(), t_w, **tol)


def test_gradients_reach_every_parameter():
    mha = ref.MultiHeadAttention(8, 2).double()
    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    out, _ = mha(x, x, x)
    out.sum().backward()
    assert x.grad is not None
    assert all(p.grad is not None for p in mha.parameters())
    assert torch.autograd.gradcheck(lambda inp: mha(inp, inp, inp)[0], (x,))
