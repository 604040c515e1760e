"""The model answers in ``solutions/`` agree with the independent oracle in ``reference/``.

Each solution file is imported by path (it is a stand-alone student file, not a package
module) and compared with ``reference.<module>`` on batched and unbatched inputs,
n != m, d_k != d_v, float32 and float64, with and without masks. Modules and
classifiers are compared with the *same* weights (``load_state_dict`` from one into the
other). Figures are compared through the kit's figure inspector.

We also check that every contract name exists, and that the stub generated from each
solution file (solution regions stripped) still imports and raises
``NotImplementedError`` for every public function, method and class.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.contract import EXERCISES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
BY_MODULE = {ex.module: ex for ex in EXERCISES}

torch.set_num_threads(1)


# --------------------------------------------------------------------------- loading

_cache: dict[str, object] = {}


def load_solution(module: str):
    """Import ``solutions/<folder>/<module>.py`` by path as ``solution_<module>``."""
    if module not in _cache:
        ex = BY_MODULE[module]
        path = SOLUTIONS / ex.folder / ex.filename
        spec = importlib.util.spec_from_file_location(f"solution_{module}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _cache[module] = mod
    return _cache[module]


@pytest.fixture(scope="module")
def attention():
    return load_solution("attention"), importlib.import_module("reference.attention")


@pytest.fixture(scope="module")
def visualize():
    return load_solution("visualize"), importlib.import_module("reference.visualize")


@pytest.fixture(scope="module")
def multihead():
    return load_solution("multihead"), importlib.import_module("reference.multihead")


@pytest.fixture(scope="module")
def causal():
    return load_solution("causal"), importlib.import_module("reference.causal")


@pytest.fixture(scope="module")
def lstm():
    return (load_solution("lstm_vs_attention"),
            importlib.import_module("reference.lstm_vs_attention"))


@pytest.fixture(scope="module")
def figures():
    return importlib.import_module("autograder.support.figures")


def close(a, b, *, rtol=1e-6, atol=1e-8):
    a = a.detach().cpu().numpy() if torch.is_tensor(a) else np.asarray(a)
    b = b.detach().cpu().numpy() if torch.is_tensor(b) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype in (np.float32, torch.float32) else dict(rtol=1e-9, atol=1e-11)


# --------------------------------------------------------------------------- contract & stubs

@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.id)
def test_every_contract_name_exists(ex):
    mod = load_solution(ex.module)
    missing = [name for name in ex.names if not hasattr(mod, name)]
    assert not missing, f"{ex.filename} lacks {missing}"


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.id)
def test_solution_imports_only_allowed_modules(ex):
    import ast
    tree = ast.parse((SOLUTIONS / ex.folder / ex.filename).read_text())
    allowed = {"numpy", "torch", "matplotlib", "__future__", "math", "typing"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots = {(node.module or "").split(".")[0]}
        else:
            continue
        assert roots <= allowed, f"{ex.filename}:{node.lineno} imports {roots - allowed}"


def _dummy_call(obj):
    """Call ``obj`` with ``None`` for every required parameter."""
    sig = inspect.signature(obj)
    args = [None for p in sig.parameters.values()
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return obj(*args)


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.id)
def test_stub_raises_not_implemented_everywhere(ex):
    markers = pytest.importorskip("autograder.packaging.release.markers")
    path = SOLUTIONS / ex.folder / ex.filename
    stripped = markers.strip_solutions(path.read_text(), str(path))
    markers.check_stub(stripped.text, str(path), stripped.secret_lines, stripped.kept_lines)
    namespace: dict = {"__name__": f"stub_{ex.module}"}
    exec(compile(stripped.text, str(path), "exec"), namespace)
    for name in ex.names:
        obj = namespace[name]
        with pytest.raises(NotImplementedError):
            _dummy_call(obj)
        if inspect.isclass(obj):
            # methods too: call them on an instance built without __init__
            instance = obj.__new__(obj)
            torch.nn.Module.__init__(instance)
            for meth_name, meth in vars(obj).items():
                if meth_name.startswith("_") or not callable(meth):
                    continue
                with pytest.raises(NotImplementedError):
                    _dummy_call(getattr(instance, meth_name))


# --------------------------------------------------------------------------- ex1

ATTN_SHAPES = [  # (lead, n, m, d_k, d_v)
    ((), 4, 4, 8, 8),
    ((), 3, 5, 4, 6),
    ((2,), 3, 5, 4, 6),
    ((2, 3), 4, 2, 5, 3),
]


def _qkv(rng, lead, n, m, d_k, d_v, dtype=np.float64):
    Q = rng.normal(size=(*lead, n, d_k)).astype(dtype)
    K = rng.normal(size=(*lead, m, d_k)).astype(dtype)
    V = rng.normal(size=(*lead, m, d_v)).astype(dtype)
    return Q, K, V


def _masks(rng, lead, n, m):
    """None, a shared (n, m) mask, and a per-batch key mask (..., 1, m)."""
    shared = rng.random((n, m)) > 0.4
    shared[:, 0] = True
    keys = rng.random((*lead, 1, m)) > 0.4
    keys[..., 0] = True
    return [None, shared, keys]


def test_softmax_agrees(attention):
    sol, ref = attention
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 5)) * 10
    for axis in (-1, 0, 1):
        close(sol.softmax(x, axis=axis), ref.softmax(x, axis=axis))
    big = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=np.float32)
    out = sol.softmax(big)
    assert np.all(np.isfinite(out))
    close(out, ref.softmax(big))
    with_inf = np.array([[0.0, -np.inf, 1.0]])
    close(sol.softmax(with_inf), ref.softmax(with_inf))


@pytest.mark.parametrize("shape", ATTN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_attention_np_agrees(attention, shape, dtype):
    sol, ref = attention
    rng = np.random.default_rng(1)
    Q, K, V = _qkv(rng, *shape, dtype=dtype)
    copies = [a.copy() for a in (Q, K, V)]
    for mask in _masks(rng, shape[0], shape[1], shape[2]):
        out, w = sol.scaled_dot_product_attention_np(Q, K, V, mask)
        r_out, r_w = ref.scaled_dot_product_attention_np(Q, K, V, mask)
        close(out, r_out, **tol(dtype))
        close(w, r_w, **tol(dtype))
        if mask is not None:
            assert np.all(np.broadcast_to(w, r_w.shape)[~np.broadcast_to(mask, r_w.shape)] == 0)
    for a, b in zip((Q, K, V), copies):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("shape", ATTN_SHAPES, ids=str)
def test_attention_backward_agrees(attention, shape):
    sol, ref = attention
    rng = np.random.default_rng(2)
    Q, K, V = _qkv(rng, *shape)
    lead, n, m, _, d_v = shape
    d_out = rng.normal(size=(*lead, n, d_v))
    for mask in _masks(rng, lead, n, m):
        for g, r in zip(sol.attention_backward_np(d_out, Q, K, V, mask),
                        ref.attention_backward_np(d_out, Q, K, V, mask)):
            close(g, r, rtol=1e-8, atol=1e-10)


def test_attention_backward_matches_numerical_gradient(attention):
    sol, _ = attention
    rng = np.random.default_rng(3)
    Q, K, V = _qkv(rng, (2,), 3, 4, 3, 2)
    d_out = rng.normal(size=(2, 3, 2))
    mask = np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=bool)
    grads = sol.attention_backward_np(d_out, Q, K, V, mask)
    for i, (x, g) in enumerate(zip((Q, K, V), grads)):
        def loss(x_, i=i):
            args = [Q, K, V]
            args[i] = x_
            return float(np.sum(d_out * sol.scaled_dot_product_attention_np(*args, mask)[0]))
        close(sol.numerical_gradient(loss, x), g, rtol=1e-5, atol=1e-7)


def test_numerical_gradient_agrees(attention):
    sol, ref = attention
    rng = np.random.default_rng(4)
    for shape in [(), (5,), (2, 3)]:
        x = rng.normal(size=shape)
        before = x.copy()

        def f(z):
            return float(np.sum(np.sin(z) * z ** 2))

        g = sol.numerical_gradient(f, x)
        assert np.array_equal(x, before), "x was modified"
        assert g.dtype == np.float64 and g.shape == x.shape
        close(g, ref.numerical_gradient(f, x), rtol=1e-6, atol=1e-8)
        close(g, ref.numerical_gradient(f, x, eps=1e-4), rtol=1e-5, atol=1e-6)
        close(sol.numerical_gradient(f, x, eps=1e-4), ref.numerical_gradient(f, x, eps=1e-4))


@pytest.mark.parametrize("shape", ATTN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_attention_torch_agrees(attention, shape, dtype):
    sol, ref = attention
    rng = np.random.default_rng(5)
    lead, n, m, _, d_v = shape
    arrays = _qkv(rng, *shape)
    d_out = torch.tensor(rng.normal(size=(*lead, n, d_v)), dtype=dtype)
    for mask in _masks(rng, lead, n, m):
        tmask = None if mask is None else torch.from_numpy(mask)
        results = []
        for mod in (sol, ref):
            Q, K, V = (torch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays)
            out, w = mod.scaled_dot_product_attention(Q, K, V, tmask)
            assert out.dtype == dtype and w.dtype == dtype
            (out * d_out).sum().backward()
            results.append([out, w, Q.grad, K.grad, V.grad])
        for a, b in zip(*results):
            close(a, b, **tol(dtype))
        # and the torch version agrees with the numpy one
        np_out, np_w = sol.scaled_dot_product_attention_np(*arrays, mask)
        close(results[0][0], np_out, **tol(dtype))
        close(results[0][1], np_w, **tol(dtype))


# --------------------------------------------------------------------------- ex2

QT = ["the", "cat", "sat"]
KT = ["a", "b", "c", "d"]


def _weights(rng, n, m):
    w = rng.random((n, m))
    return w / w.sum(-1, keepdims=True)


_AXES_KEYS = ("matrix", "xticklabels", "yticklabels", "xlabel", "ylabel", "title",
              "clim", "has_colorbar")


def _same_axes(a, b):
    for key in _AXES_KEYS:
        if key == "matrix":
            close(np.array(a[key], dtype=float), np.array(b[key], dtype=float))
        elif key in ("xlabel", "ylabel"):
            continue  # wording may differ; checked separately
        else:
            assert a[key] == b[key], (key, a[key], b[key])


def test_plot_attention_agrees(visualize, figures):
    sol, ref = visualize
    rng = np.random.default_rng(6)
    w = _weights(rng, len(QT), len(KT))
    try:
        mine = figures.describe_axes(sol.plot_attention(w, QT, KT, title="T"))
        theirs = figures.describe_axes(ref.plot_attention(w, QT, KT, title="T"))
        _same_axes(mine, theirs)
        close(np.array(mine["matrix"], dtype=float), w)      # row 0 at the top
        assert mine["xticklabels"] == KT and mine["yticklabels"] == QT
        assert "Key" in mine["xlabel"] and "Query" in mine["ylabel"]
        assert mine["clim"] == [0.0, 1.0] and mine["has_colorbar"] and mine["title"] == "T"

        # torch input requiring grad, drawn into a given axes, no title
        _, ax = plt.subplots()
        t = torch.tensor(w, dtype=torch.float32, requires_grad=True)
        assert sol.plot_attention(t, QT, KT, ax=ax) is ax
        mine = figures.describe_axes(ax)
        close(np.array(mine["matrix"], dtype=float), w, rtol=1e-6, atol=1e-7)
        assert mine["title"] == ""
    finally:
        plt.close("all")


@pytest.mark.parametrize("h,ncols", [(5, 2), (3, 4), (4, 4)])
def test_plot_attention_heads_agrees(visualize, figures, h, ncols):
    sol, ref = visualize
    rng = np.random.default_rng(7)
    tokens = ["x", "y", "z"]
    w = np.stack([_weights(rng, 3, 3) for _ in range(h)])
    try:
        mine = figures.describe_figure(sol.plot_attention_heads(w, tokens, ncols=ncols, title="S"))
        theirs = figures.describe_figure(ref.plot_attention_heads(w, tokens, ncols=ncols, title="S"))
        assert mine["suptitle"] == theirs["suptitle"] == "S"
        assert mine["grid"] == theirs["grid"] == [math.ceil(h / ncols), min(h, ncols)]
        shown = [a for a in mine["axes"] if a["visible"]]
        assert len(shown) == h == len([a for a in theirs["axes"] if a["visible"]])
        for i, (a, b) in enumerate(zip(shown, [a for a in theirs["axes"] if a["visible"]])):
            _same_axes(a, b)
            assert a["title"] == f"Head {i + 1}"
            close(np.array(a["matrix"], dtype=float), w[i])
            assert a["xticklabels"] == tokens and a["yticklabels"] == tokens
        no_title = figures.describe_figure(sol.plot_attention_heads(torch.tensor(w), tokens, ncols=ncols))
        assert no_title["suptitle"] == ""
    finally:
        plt.close("all")


def test_top_attended_agrees(visualize):
    sol, ref = visualize
    rng = np.random.default_rng(8)
    w = _weights(rng, 3, 4)
    tied = np.array([[0.4, 0.2, 0.4, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.0, 0.5]])
    for weights in (w, tied, torch.tensor(tied, requires_grad=True)):
        for k in (1, 2, 4):
            got = sol.top_attended(weights, KT, k=k)
            assert got == ref.top_attended(weights, KT, k=k)
    assert sol.top_attended(tied, KT, k=2) == [["a", "c"], ["a", "b"], ["b", "d"]]


# --------------------------------------------------------------------------- ex3

def test_split_combine_agree(multihead):
    sol, ref = multihead
    x = torch.randn(2, 5, 12, dtype=torch.float64, requires_grad=True)
    for h in (1, 3, 4):
        s = sol.split_heads(x, h)
        close(s, ref.split_heads(x, h), rtol=0, atol=0)
        assert s.shape == (2, h, 5, 12 // h)
        close(s[:, 1 % h, :, :], x[:, :, (1 % h) * (12 // h):(1 % h + 1) * (12 // h)], rtol=0, atol=0)
        close(sol.combine_heads(s), ref.combine_heads(s), rtol=0, atol=0)
        close(sol.combine_heads(s), x, rtol=0, atol=0)


def _mha_masks(B, h, n, m):
    g = torch.Generator().manual_seed(0)
    full = torch.rand(B, h, n, m, generator=g) > 0.4
    full[..., 0] = True
    keys = torch.rand(B, 1, 1, m, generator=g) > 0.4
    keys[..., 0] = True
    shared = torch.rand(n, m, generator=g) > 0.4
    shared[:, 0] = True
    return [None, shared, keys, full]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_multihead_agrees_with_same_weights(multihead, bias, dtype):
    sol, ref = multihead
    torch.manual_seed(0)
    B, n, m, d_model, h = 2, 3, 5, 8, 2
    mine = sol.MultiHeadAttention(d_model, h, bias=bias).to(dtype)
    theirs = ref.MultiHeadAttention(d_model, h, bias=bias).to(dtype)
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict())
    assert {name for name, _ in mine.named_children()} == {"W_q", "W_k", "W_v", "W_o"}
    theirs.load_state_dict(mine.state_dict())
    q = torch.randn(B, n, d_model, dtype=dtype)
    kv = torch.randn(B, m, d_model, dtype=dtype)
    for mask in _mha_masks(B, h, n, m):
        out, w = mine(q, kv, kv, mask)
        r_out, r_w = theirs(q, kv, kv, mask)
        assert out.shape == (B, n, d_model) and w.shape == (B, h, n, m)
        assert out.dtype == dtype
        close(out, r_out, **tol(dtype))
        close(w, r_w, **tol(dtype))
    # self-attention with gradients
    x = torch.randn(B, n, d_model, dtype=dtype, requires_grad=True)
    grads = []
    for model in (mine, theirs):
        x.grad = None
        model(x, x, x)[0].sum().backward()
        grads.append(x.grad.clone())
    close(*grads, **tol(dtype))


def test_multihead_rejects_indivisible(multihead):
    sol, ref = multihead
    with pytest.raises(ValueError):
        sol.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError):
        ref.MultiHeadAttention(10, 3)


# --------------------------------------------------------------------------- ex4

def test_masks_agree(causal):
    sol, ref = causal
    for n in (1, 4):
        mine = sol.create_causal_mask(n)
        assert mine.dtype == torch.bool
        assert torch.equal(mine, ref.create_causal_mask(n))
    lengths = torch.tensor([3, 1, 5])
    pad = sol.create_padding_mask(lengths, 5)
    assert pad.dtype == torch.bool and torch.equal(pad, ref.create_padding_mask(lengths, 5))
    c = sol.create_causal_mask(5)
    both = sol.combine_masks(c, pad)
    assert both.shape == (3, 5, 5) and both.dtype == torch.bool
    assert torch.equal(both, ref.combine_masks(c, pad))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_causal_attention_and_cache_agree(causal, dtype):
    sol, ref = causal
    g = torch.Generator().manual_seed(1)
    B, n, d_model, d_k, d_v = 2, 5, 6, 4, 3
    x = torch.randn(B, n, d_model, generator=g, dtype=dtype)
    W_q, W_k = (torch.randn(d_model, d_k, generator=g, dtype=dtype) for _ in range(2))
    W_v = torch.randn(d_model, d_v, generator=g, dtype=dtype)
    out, w = sol.causal_self_attention(x, W_q, W_k, W_v)
    r_out, r_w = ref.causal_self_attention(x, W_q, W_k, W_v)
    assert out.dtype == dtype and out.shape == (B, n, d_v) and w.shape == (B, n, n)
    close(out, r_out, **tol(dtype))
    close(w, r_w, **tol(dtype))
    assert torch.all(w.triu(1) == 0)
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    for t in (1, 3, n):
        o_t, w_t = sol.attend_next(Q[:, t - 1], K[:, :t], V[:, :t])
        r_o, r_w_t = ref.attend_next(Q[:, t - 1], K[:, :t], V[:, :t])
        assert o_t.shape == (B, d_v) and w_t.shape == (B, t)
        close(o_t, r_o, **tol(dtype))
        close(w_t, r_w_t, **tol(dtype))
        close(o_t, out[:, t - 1], **tol(dtype))
        close(w_t, w[:, t - 1, :t], **tol(dtype))


class _TinyLM(torch.nn.Module):
    """A fixed causal LM: logits at t depend on tokens 0..t (a running mean of embeddings)."""

    def __init__(self, vocab: int = 7, d: int = 5, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.Parameter(torch.randn(vocab, d, generator=g))
        self.out = torch.nn.Parameter(torch.randn(d, vocab, generator=g))
        self.calls = []

    def forward(self, ids):
        self.calls.append((tuple(ids.shape), torch.is_grad_enabled()))
        e = self.embed[ids]                                          # (B, t, d)
        counts = torch.arange(1, ids.shape[1] + 1).view(1, -1, 1)
        return (e.cumsum(1) / counts) @ self.out                     # (B, t, vocab)


class _TiedLM(torch.nn.Module):
    """Every logit equal: greedy decoding must pick token 0."""

    def forward(self, ids):
        return torch.zeros(*ids.shape, 4)


def test_greedy_generate_agrees(causal):
    sol, ref = causal
    prompt = torch.tensor([[1, 2], [3, 3], [6, 0]])
    before = prompt.clone()
    model = _TinyLM()
    mine = sol.greedy_generate(model, prompt, 4)
    assert torch.equal(prompt, before)
    assert mine.dtype == prompt.dtype and mine.shape == (3, 6)
    assert torch.equal(mine[:, :2], prompt)
    assert [shape for shape, _ in model.calls] == [(3, t) for t in range(2, 6)]
    assert not any(grad for _, grad in model.calls), "model called with grad enabled"
    assert torch.equal(mine, ref.greedy_generate(_TinyLM(), prompt, 4))
    assert torch.equal(sol.greedy_generate(model, prompt, 0), prompt)
    tied = sol.greedy_generate(_TiedLM(), prompt, 3)
    assert torch.equal(tied, ref.greedy_generate(_TiedLM(), prompt, 3))
    assert torch.all(tied[:, 2:] == 0)


# --------------------------------------------------------------------------- ex5

def test_dataset_and_path_length_agree(lstm):
    sol, ref = lstm
    tokens, labels = sol.make_recall_dataset(6, 5, 4, seed=3)
    r_tokens, r_labels = ref.make_recall_dataset(6, 5, 4, seed=3)
    assert torch.equal(tokens, r_tokens) and torch.equal(labels, r_labels)
    assert labels.data_ptr() != tokens.data_ptr()
    for kind in ("lstm", "attention"):
        for n in (1, 7):
            assert sol.path_length(kind, n) == ref.path_length(kind, n)
    with pytest.raises(ValueError):
        sol.path_length("transformer", 5)


def _pair(sol, ref, kind, vocab=6, d=8, classes=6, max_len=10):
    torch.manual_seed(0)
    if kind == "lstm":
        mine, theirs = sol.LSTMClassifier(vocab, d, classes), ref.LSTMClassifier(vocab, d, classes)
    else:
        mine = sol.AttentionClassifier(vocab, d, classes, max_len)
        theirs = ref.AttentionClassifier(vocab, d, classes, max_len)
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict())
    theirs.load_state_dict(mine.state_dict())
    return mine, theirs


@pytest.mark.parametrize("kind", ["lstm", "attention"])
def test_classifiers_agree_with_same_weights(lstm, kind):
    sol, ref = lstm
    mine, theirs = _pair(sol, ref, kind)
    tokens, labels = sol.make_recall_dataset(5, 7, 6, seed=0)
    close(mine(tokens), theirs(tokens), rtol=1e-5, atol=1e-6)
    close(mine.embed_inputs(tokens), theirs.embed_inputs(tokens), rtol=0, atol=0)
    E = torch.randn(5, 7, 8)
    close(mine.classify(E), theirs.classify(E), rtol=1e-5, atol=1e-6)
    mine64, theirs64 = copy.deepcopy(mine).double(), copy.deepcopy(theirs).double()
    close(mine64(tokens), theirs64(tokens), rtol=1e-10, atol=1e-12)

    # input-gradient norms, without touching the parameters' .grad
    for p in mine.parameters():
        p.grad = torch.full_like(p, 7.0)
    norms = sol.input_gradient_norms(mine, tokens, labels)
    assert norms.shape == (7,)
    assert all(torch.equal(p.grad, torch.full_like(p, 7.0)) for p in mine.parameters())
    close(norms, ref.input_gradient_norms(theirs, tokens, labels), rtol=1e-5, atol=1e-7)

    assert isinstance(sol.accuracy(mine, tokens, labels), float)
    assert sol.accuracy(mine, tokens, labels) == pytest.approx(ref.accuracy(theirs, tokens, labels))


@pytest.mark.parametrize("kind", ["lstm", "attention"])
def test_train_agrees_from_same_weights(lstm, kind):
    sol, ref = lstm
    mine, theirs = _pair(sol, ref, kind)
    mine, theirs = mine.double(), theirs.double()
    tokens, labels = sol.make_recall_dataset(16, 6, 6, seed=1)
    losses = sol.train(mine, tokens, labels, steps=5, lr=1e-2)
    r_losses = ref.train(theirs, tokens, labels, steps=5, lr=1e-2)
    assert isinstance(losses, list) and len(losses) == 5
    assert all(type(v) is float for v in losses)
    close(losses, r_losses, rtol=1e-8, atol=1e-10)
    theirs_state = theirs.state_dict()
    for name, value in mine.state_dict().items():
        close(value, theirs_state[name], rtol=1e-7, atol=1e-9)
    assert sol.train(mine, tokens, labels, steps=0) == []
    acc = sol.accuracy(mine, tokens, labels)
    assert acc == pytest.approx(ref.accuracy(theirs, tokens, labels))
