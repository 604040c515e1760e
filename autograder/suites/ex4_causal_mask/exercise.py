"""ex4 · Causal masking and generation, as data: the registry row, the contract's sentences its
tests cite, its coverage rows and ``check``'s note (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import (BOOL_RESULT, COVERED, NA, NO_FLOAT_INPUT, NO_TENSOR_INPUT, NOT_DIFFERENTIABLE,
                                 RULES, Exercise, Row, Sentence, torch_fn)

TOKEN_IDS = NA("token ids in, token ids out: no float dtype to keep")

EXERCISE = Exercise(
    id="ex4", folder="ex4_causal_mask", module="causal",
    title="Causal masking and generation",
    names=("create_causal_mask", "create_padding_mask", "combine_masks",
           "causal_self_attention", "attend_next", "greedy_generate"),
    banned=("torch.nn.MultiheadAttention", "torch.nn.functional.multi_head_attention_forward",
            "torch.nn.functional.scaled_dot_product_attention", "torch.nn.Transformer",
            "torch.nn.TransformerEncoder", "torch.nn.TransformerDecoder",
            "torch.nn.TransformerEncoderLayer", "torch.nn.TransformerDecoderLayer"),
    hidden_coverage=(
        "masks of other sizes, devices and dtypes; causal self-attention values and gradients "
        "against a reference implementation, with no information flowing from later tokens; "
        "attend_next agreeing with full causal attention step by step; greedy_generate on "
        "other models and prompts, including ties and edge cases; inputs left unchanged; "
        "the rules (no built-in attention or transformer layers)."),
    contract=(
        Sentence("create_causal_mask/signature", "`(seq_len: int, device=None) -> torch.BoolTensor`"),
        Sentence("create_causal_mask/pattern", "`(seq_len, seq_len)`, `True` on and below the diagonal"),
        Sentence("create_padding_mask/signature", "`(lengths: LongTensor, max_len: int) -> torch.BoolTensor`"),
        Sentence("create_padding_mask/pattern", "`(B, max_len)`, `True` at positions `< lengths[b]`"),
        Sentence("combine_masks/signature", "`(causal, padding) -> torch.BoolTensor`"),
        Sentence("combine_masks/pattern", "`(B, n, n)` with `[b, i, j] = causal[i, j] and padding[b, j]`"),
        Sentence("causal_self_attention",
                 "single head: `x (B, n, d_model)`, `W_* (d_model, d_k)` (or `d_v` for `W_v`) plain tensors; "
                 "`Q = x @ W_q` etc.; causal attention; `output (B, n, d_v)`, `weights (B, n, n)`"),
        Sentence("attend_next",
                 "one decoding step with a key/value cache: `q_t (B, d_k)`, `K_cache (B, t, d_k)`, "
                 "`V_cache (B, t, d_v)`; the new position attends to all `t` cached positions; "
                 "`output (B, d_v)`, `weights (B, t)`"),
        Sentence("attend_next/rows",
                 "Row `t−1` of `causal_self_attention` equals `attend_next` on the first `t` keys"),
        Sentence("greedy_generate/signature",
                 "`(model, prompt: LongTensor, max_new_tokens: int) -> LongTensor`"),
        Sentence("greedy_generate/argmax",
                 "`model(ids (B, t)) -> logits (B, t, vocab)` is a causal language model; append `argmax` "
                 "of the last position's logits (lowest index on ties) `max_new_tokens` times"),
        Sentence("greedy_generate/result", "returns `(B, t + max_new_tokens)` starting with `prompt`"),
        Sentence("banned", "Not allowed: the same as ex3, and `torch.nn.Transformer*`."),
    ),
    rows=(
        Row("create_causal_mask", {**{r: NO_TENSOR_INPUT for r in RULES if r.startswith("inputs/")},
                                   "dtype/float32": BOOL_RESULT, "dtype/float64": BOOL_RESULT,
                                   "device": COVERED, "grad": NOT_DIFFERENTIABLE, "banned": COVERED,
                                   "args/device": COVERED, "size/seq_len = 1": COVERED}),
        torch_fn("create_padding_mask", inputs_grad=NO_FLOAT_INPUT, f32=BOOL_RESULT, f64=BOOL_RESULT,
                 device=NA("the mask depends on the values in lengths (a loop over lengths[b] is allowed), so "
                           "it cannot run on meta tensors; the spec asks for lengths' device, which every "
                           "test's CPU result satisfies"),
                 grad=NOT_DIFFERENTIABLE, **{"args/max_len > max(lengths)": COVERED, "size/B = 1": COVERED}),
        torch_fn("combine_masks", inputs_grad=NO_FLOAT_INPUT, f32=BOOL_RESULT, f64=BOOL_RESULT,
                 grad=NOT_DIFFERENTIABLE, **{"size/n = 1, B = 1": COVERED}),
        torch_fn("causal_self_attention", **{"size/one position, B = 1": COVERED}),
        torch_fn("attend_next", **{"size/a cache of one position": COVERED, "size/B = 1": COVERED}),
        torch_fn("greedy_generate", inputs_grad=NO_FLOAT_INPUT, f32=TOKEN_IDS, f64=TOKEN_IDS,
                 device=NA("generation reads the argmax values (.tolist(), int(...) are allowed: nothing "
                           "is differentiated), so it cannot run on meta tensors"),
                 grad=NOT_DIFFERENTIABLE, **{"args/max_new_tokens = 0": COVERED, "ties": COVERED,
                                             "size/B = 1, a one-token prompt": COVERED}),
    ),
)
