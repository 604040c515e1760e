"""ex3 · Multi-head attention, as data: the registry row, the contract's sentences its tests
cite, its coverage rows and ``check``'s note (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import COVERED, Exercise, Sentence, plain, torch_fn

EXERCISE = Exercise(
    id="ex3", folder="ex3_multihead", module="multihead",
    title="Multi-head attention",
    names=("split_heads", "combine_heads", "MultiHeadAttention"),
    banned=("torch.nn.MultiheadAttention", "torch.nn.functional.multi_head_attention_forward",
            "torch.nn.functional.scaled_dot_product_attention"),
    hidden_coverage=(
        "split_heads and combine_heads on other shapes and dtypes; the module's exact "
        "parameters (with and without bias); outputs and per-head weights against a reference "
        "implementation for self- and cross-attention, with masks of several shapes, in "
        "float32 and float64; gradients reaching every parameter; the rules (no built-in "
        "multi-head attention)."),
    contract=(
        Sentence("split_heads/signature", "`(x: Tensor, num_heads: int) -> Tensor`"),
        Sentence("split_heads/features",
                 "`(B, n, d_model) → (B, h, n, d_model // h)`; head i holds features "
                 "`i·d_head … (i+1)·d_head − 1`"),
        Sentence("combine_heads/inverse",
                 "inverse of `split_heads`: `(B, h, n, d_head) → (B, n, h·d_head)`"),
        Sentence("MultiHeadAttention/init", "`nn.Module`, `__init__(self, d_model, num_heads, bias=True)`"),
        Sentence("MultiHeadAttention/raises", "raises `ValueError` when `d_model % num_heads != 0`"),
        Sentence("MultiHeadAttention/structure",
                 "has exactly the submodules `W_q`, `W_k`, `W_v`, `W_o`, each "
                 "`nn.Linear(d_model, d_model, bias=bias)`, and no other parameters"),
        Sentence("MultiHeadAttention.forward/signature", "`(query, key, value, mask=None) -> (output, weights)`"),
        Sentence("MultiHeadAttention.forward/inputs", "`query (B, n, d_model)`, `key`/`value (B, m, d_model)`"),
        Sentence("MultiHeadAttention.forward/mask", "`mask` boolean, broadcastable to `(B, h, n, m)`"),
        Sentence("MultiHeadAttention.forward/formula",
                 "`output = W_o(combine_heads(softmax(q kᵀ / √d_head) v))` with `q, k, v` the split projections"),
        Sentence("MultiHeadAttention.forward/shapes", "`output (B, n, d_model)`, `weights (B, h, n, m)`"),
        Sentence("banned", "Not allowed: `torch.nn.MultiheadAttention`, "
                           "`torch.nn.functional.multi_head_attention_forward`, "
                           "`torch.nn.functional.scaled_dot_product_attention`."),
    ),
    rows=(
        torch_fn("split_heads", **{"args/num_heads": COVERED, "size/one head": COVERED}),
        torch_fn("combine_heads", **{"size/one head": COVERED}),
        plain("MultiHeadAttention.__init__", **{"args/bias": COVERED, "raises": COVERED, "structure": COVERED}),
        torch_fn("MultiHeadAttention.forward", **{
            "mask/(n, m)": COVERED, "mask/(B, 1, 1, m)": COVERED, "mask/(B, 1, n, m)": COVERED,
            "mask/(B, h, n, m)": COVERED, "mask/(h, n, m)": COVERED, "args/bias=False": COVERED,
            "size/one head": COVERED, "size/one query": COVERED, "size/one key": COVERED}),
    ),
)
