"""ex5 · Attention versus an LSTM on long sequences, as data: the registry row, the contract's
sentences its tests cite, its coverage rows and ``check``'s note (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import COVERED, NA, NO_FLOAT_INPUT, Exercise, Sentence, plain, torch_fn

BANS_ELSEWHERE = NA("the contract bans attention APIs in AttentionClassifier only")
TOKENS_IN = NA("integer tokens in; the embedding's dtype out (see classify)")
TOKENS_THROUGH = NA("integer tokens in (classify keeps the dtype)")
NOTHING_TO_DIFFERENTIATE = NA("integer tokens: nothing to differentiate")
THROUGH_CLASSIFY = NA("integer tokens: differentiated through classify")
SIZES = {"size/B = 1": COVERED, "size/one token": COVERED}


def _classifier(name: str, banned: object) -> tuple:
    """The rows of one classifier: its constructor and its three methods."""
    return (
        plain(f"{name}.__init__", banned=banned, structure=COVERED,
              **({"args/max_len > n": COVERED} if name == "AttentionClassifier" else {})),
        torch_fn(f"{name}.embed_inputs", inputs_grad=NO_FLOAT_INPUT, f32=TOKENS_IN, f64=TOKENS_IN,
                 grad=NOTHING_TO_DIFFERENTIATE, banned=banned),
        torch_fn(f"{name}.classify", banned=banned, **SIZES),
        torch_fn(f"{name}.forward", inputs_grad=NO_FLOAT_INPUT, f32=TOKENS_THROUGH, f64=TOKENS_THROUGH,
                 grad=THROUGH_CLASSIFY, banned=banned),
    )


EXERCISE = Exercise(
    id="ex5", folder="ex5_lstm_comparison", module="lstm_vs_attention",
    title="Attention versus an LSTM on long sequences",
    names=("make_recall_dataset", "LSTMClassifier", "AttentionClassifier",
           "input_gradient_norms", "path_length", "train", "accuracy"),
    banned=("torch.nn.MultiheadAttention", "torch.nn.functional.scaled_dot_product_attention"),
    banned_in=("AttentionClassifier",),
    warm_up=("meta", "optimizer"),
    hidden_coverage=(
        "the dataset's exact tokens and labels; both models' structure and values against "
        "a reference implementation; input-gradient norms and the vanishing-gradient effect "
        "on long sequences; train's optimiser, learning rate and recorded losses; accuracy; "
        "the attention model learning the recall task with the kit's own training loop; the "
        "rules (attention written by hand)."),
    contract=(
        Sentence("task", "The task: a sequence of random tokens whose label is its first token, so the model "
                         "must carry information across the whole sequence."),
        Sentence("make_recall_dataset/signature", "`(num_samples, seq_len, vocab_size, seed) -> (tokens, labels)`"),
        Sentence("make_recall_dataset/recipe",
                 "`g = torch.Generator().manual_seed(seed)`; `tokens = torch.randint(1, vocab_size, "
                 "(num_samples, seq_len), generator=g)`; `labels = tokens[:, 0]` (a copy)"),
        Sentence("LSTMClassifier/init", "`nn.Module`, `__init__(self, vocab_size, d_model, num_classes)`"),
        Sentence("LSTMClassifier/structure",
                 "submodules `embed = nn.Embedding(vocab_size, d_model)`, `lstm = nn.LSTM(d_model, d_model, "
                 "batch_first=True)`, `head = nn.Linear(d_model, num_classes)`, nothing else"),
        Sentence("LSTMClassifier/methods",
                 "`embed_inputs(tokens) = embed(tokens)`; `classify(x)` runs the LSTM over `x (B, n, d_model)` "
                 "and returns `head(final hidden state)`; `forward(tokens) = classify(embed_inputs(tokens))`, "
                 "logits `(B, num_classes)`"),
        Sentence("AttentionClassifier/init", "`nn.Module`, `__init__(self, vocab_size, d_model, num_classes, max_len)`"),
        Sentence("AttentionClassifier/structure",
                 "submodules `embed = nn.Embedding(vocab_size, d_model)`, `pos = nn.Embedding(max_len, d_model)`, "
                 "`W_q`, `W_k`, `W_v` (each `nn.Linear(d_model, d_model)`), `head = nn.Linear(d_model, "
                 "num_classes)`, nothing else"),
        Sentence("AttentionClassifier/methods",
                 "`embed_inputs(tokens) = embed(tokens) + pos(arange(n))`; `classify(x)`: single-head unmasked "
                 "scaled dot-product self-attention of `x` with `W_q`, `W_k`, `W_v`, then `head` of the "
                 "attention output at the last position; `forward(tokens) = classify(embed_inputs(tokens))`"),
        Sentence("input_gradient_norms/signature", "`(model, tokens, labels) -> Tensor`"),
        Sentence("input_gradient_norms/norms",
                 "`(n,)`: with `E = model.embed_inputs(tokens)` detached and made to require grad, the gradient "
                 "of `sum_b model.classify(E)[b, labels[b]]` w.r.t. `E`; position t gets the mean over the "
                 "batch of the L2 norm of `grad[b, t]`"),
        Sentence("input_gradient_norms/grads-untouched", "The parameters' `.grad` are left untouched"),
        Sentence("path_length/signature", "`(kind: str, seq_len: int) -> int`"),
        Sentence("path_length/steps",
                 'the number of sequential steps information takes from position 0 to the last position: '
                 '`"lstm"` → `seq_len − 1`, `"attention"` → `1`'),
        Sentence("train/signature", "`(model, tokens, labels, steps, lr=1e-2) -> list[float]`"),
        Sentence("train/procedure",
                 "full-batch training: `torch.optim.Adam(model.parameters(), lr=lr)`, cross-entropy loss on all "
                 "samples each step; returns the loss of each of the `steps` steps, computed before that "
                 "step's update"),
        Sentence("accuracy/signature", "`(model, tokens, labels) -> float`"),
        Sentence("accuracy/fraction",
                 "fraction of samples whose argmax logit equals the label, computed without gradients"),
        Sentence("banned", "Not allowed: `torch.nn.MultiheadAttention` and "
                           "`torch.nn.functional.scaled_dot_product_attention` in `AttentionClassifier`."),
        Sentence("lstm-required", "`nn.LSTM` is required in `LSTMClassifier`."),
    ),
    rows=(
        plain("make_recall_dataset", banned=BANS_ELSEWHERE,
              **{"args/num_samples, seq_len, vocab_size, seed": COVERED}),
        *_classifier("LSTMClassifier", BANS_ELSEWHERE),
        *_classifier("AttentionClassifier", COVERED),
        torch_fn("input_gradient_norms", inputs_grad=NO_FLOAT_INPUT,
                 f32=NA("returns norms in the model's dtype; judged on the kit's float32 model"),
                 device=NA("differentiates the model: device is kept by the classifiers' methods it calls "
                           "(their device cells); the spec does not ask this helper to run on meta"),
                 grad=NA("takes gradients itself; its result is a statistic"), banned=BANS_ELSEWHERE),
        plain("path_length", banned=BANS_ELSEWHERE, **{"args/kind, seq_len": COVERED}),
        torch_fn("train", inputs_grad=NO_FLOAT_INPUT, f32=NA("returns Python floats"),
                 f64=NA("returns Python floats"), device=NA("returns Python floats: it reads the loss values (.item())"),
                 grad=NA("trains the model; returns Python floats"), banned=BANS_ELSEWHERE,
                 **{"args/lr": COVERED, "args/steps = 0": COVERED}),
        torch_fn("accuracy", inputs_grad=NO_FLOAT_INPUT, f32=NA("returns a Python float"),
                 f64=NA("returns a Python float"), device=NA("returns a Python float: it reads the values"),
                 grad=NA("computed without gradients, returns a Python float"), banned=BANS_ELSEWHERE,
                 **{"rules/model run without gradients": COVERED}),
    ),
)
