"""ex1 · Scaled dot-product attention, as data: the registry row, the contract's sentences its
tests cite, its coverage rows and ``check``'s note (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import COVERED, Exercise, Sentence, numpy_fn, torch_fn

MASKS = {"mask/(n, m)": COVERED, "mask/(B, 1, m)": COVERED, "mask/(B, n, m)": COVERED, "mask/(m,)": COVERED}
LEADS = {"lead/0": COVERED, "lead/1": COVERED, "lead/several": COVERED}
SIZES = {"size/one query": COVERED, "size/one key": COVERED}

EXERCISE = Exercise(
    id="ex1", folder="ex1_attention", module="attention",
    title="Scaled dot-product attention",
    names=("softmax", "scaled_dot_product_attention_np", "attention_backward_np",
           "numerical_gradient", "scaled_dot_product_attention"),
    banned=("torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention"),
    numpy_only=("softmax", "scaled_dot_product_attention_np", "attention_backward_np",
                "numerical_gradient"),
    hidden_coverage=(
        "values against a reference implementation on other shapes, batch dimensions and "
        "seeds, in float32 and float64; softmax along any axis and on extreme inputs; masks "
        "of several shapes broadcast over batches and queries; the NumPy backward pass and "
        "numerical_gradient on other functions; the torch version's dtype and gradients; "
        "inputs left unchanged; the rules (no banned APIs, NumPy-only functions)."),
    contract=(
        Sentence("attention", "Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, with d_k = `Q.shape[-1]`."),
        Sentence("softmax/signature", "`softmax(x: np.ndarray, axis: int = -1) -> np.ndarray`"),
        Sentence("softmax/sums-to-one", "same shape; sums to 1 along `axis`"),
        Sentence("softmax/stable", "numerically stable (no overflow or NaN for entries of magnitude up to 1e4)"),
        Sentence("scaled_dot_product_attention_np/shapes",
                 "`Q (..., n, d_k)`, `K (..., m, d_k)`, `V (..., m, d_v)`, any number (≥ 0) of shared "
                 "leading dims; `output (..., n, d_v)`, `weights (..., n, m)`"),
        Sentence("attention/signature", "`(Q, K, V, mask=None) -> (output, weights)`"),
        Sentence("numpy-only", "NumPy only."),
        Sentence("attention_backward_np/signature", "`(d_output, Q, K, V, mask=None) -> (dQ, dK, dV)`"),
        Sentence("attention_backward_np/gradients",
                 "Gradients of `sum(d_output * output)` w.r.t. Q, K, V; same shapes as Q, K, V"),
        Sentence("numerical_gradient/signature", "`(f, x, eps=1e-6) -> np.ndarray`"),
        Sentence("numerical_gradient/central-differences",
                 "central differences `(f(x+eps·e_i) − f(x−eps·e_i)) / (2 eps)` for every element of "
                 "float64 array `x`"),
        Sentence("numerical_gradient/f", "`f` returns a Python float",
                 untested="a promise about the functions the tests hand to numerical_gradient"),
        Sentence("numerical_gradient/x-unchanged", "`x` is left unchanged"),
        Sentence("scaled_dot_product_attention/torch", "PyTorch version of the NumPy one, same shapes and semantics"),
        Sentence("banned", "Not allowed: `torch.nn.functional.scaled_dot_product_attention`, "
                           "`torch.nn.MultiheadAttention`, `torch` or `scipy` inside the NumPy functions."),
    ),
    rows=(
        numpy_fn("softmax", **{"args/axis": COVERED}),
        numpy_fn("scaled_dot_product_attention_np", **MASKS, **LEADS, **SIZES),
        numpy_fn("attention_backward_np", **MASKS, **LEADS, **SIZES),
        numpy_fn("numerical_gradient", **{"args/eps": COVERED, "args/x of any shape": COVERED}),
        torch_fn("scaled_dot_product_attention", **MASKS, **LEADS, **SIZES),
    ),
)
