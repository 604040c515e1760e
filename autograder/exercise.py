"""What an exercise is, as data: the types each exercise folder fills in.

An exercise is one folder, ``autograder/suites/<folder>/``: its hidden tests (``test_*.py``),
its public tests (``public/``) and ``exercise.py``, which holds everything else the kit knows
about it in one :class:`Exercise`: the registry row (files, names, points, banned APIs, default
or opt-in), the sentences of the published contract (EXERCISES.md) its tests cite, its rows of
the coverage matrix, and what ``check`` tells students the hidden tests cover.
:mod:`autograder.contract` finds the folders; no other module of the kit names an exercise.
Its mutants and alternative styles are the kit's own test data, in ``tests/submissions/<id>/``
(:meth:`Exercise.corpus_folder`): never shipped with the grader.

This module imports nothing of the kit (``exercise.py`` files import it while
:mod:`autograder.contract` is being imported).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


# --------------------------------------------------------------------------- the contract's sentences

@dataclass(frozen=True)
class Sentence:
    """One sentence (or clause) of the published contract, quoted verbatim from EXERCISES.md
    (``**bold**`` marks dropped, line breaks as spaces): every point a student can lose cites one.

    ``id``: what tests cite (``@pytest.mark.contract("<id>")``). ``untested``: why no hidden test
    cites it, for a sentence that is a promise about the tests or a freedom rather than a rule
    (``""``: a rule, at least one hidden test must cite it)."""
    id: str
    text: str
    untested: str = ""


_TORCH_RULE = ("Torch functions preserve the input dtype (float32 and float64 are both tested) and "
               "device, and stay differentiable (no `.detach()`, `.numpy()` or `.item()` on the path).")

# The conventions that hold for every exercise (the contract's first section).
CONVENTIONS: tuple[Sentence, ...] = (
    Sentence("conventions/masks", 'Masks are boolean and `True` means "may attend" (the convention of '
             "`torch.nn.functional.scaled_dot_product_attention`)."),
    Sentence("conventions/mask-shapes", "A mask is broadcastable to the scores' shape `(..., n, m)`."),
    Sentence("conventions/no-fully-masked-row",
             "Every query row has at least one allowed key: no test uses a fully masked row.",
             untested="a promise about the tests: every hidden mask allows at least one key per query row"),
    Sentence("conventions/masked-fill",
             "Masked scores may be filled with `-inf` or with a large negative number such as `-1e9`: "
             "both are correct and must score the same.",
             untested="a freedom, not a rule: tests/test_contract_corpus.py grades sets that fill with -inf "
                      "and sets that fill with -1e9, and requires full marks of both"),
    Sentence("conventions/inputs", "Functions never modify their inputs in place."),
    Sentence("conventions/dtype", _TORCH_RULE),
    Sentence("conventions/device", _TORCH_RULE),
    Sentence("conventions/differentiable", _TORCH_RULE),
    Sentence("conventions/numpy-float64",
             "NumPy functions may compute and return float64 whatever the input's float type."),
    Sentence("conventions/self-contained",
             "Each student file is self-contained: it may import the standard library, `numpy`, `torch` "
             "and `matplotlib`, and nothing else (not even the student's other files).",
             untested="enforced by how a file is loaded, not by a test: each exercise's file is imported "
                      "alone in a worker of its own, so another student file is not there to import"),
    Sentence("conventions/deterministic",
             "No dropout anywhere; results are deterministic given inputs and weights."),
    Sentence("conventions/submission",
             "A submission is the set of files below (any folder nesting; a notebook with the same stem, "
             "e.g. `attention.ipynb`, stands for the `.py`).",
             untested="intake's rule, applied before any test runs (tests/test_intake.py)"),
)


# --------------------------------------------------------------------------- the coverage matrix

@dataclass(frozen=True)
class NA:
    """A rule that does not apply to a function, and why."""
    reason: str


# A cell: ``COVERED`` (the hidden tests marked ``@pytest.mark.covers("<function>:<rule>")``
# cover it; the matrix fails when none does) or an :class:`NA`.
COVERED: tuple[str, ...] = ()

# the columns every function has (in this order); argument/shape/tie cells follow per row
RULES: dict[str, str] = {
    "inputs/ndarray": "input left unchanged: NumPy array",
    "inputs/tensor": "input left unchanged: tensor",
    "inputs/shared": "input left unchanged: tensor sharing memory with a NumPy array (torch.from_numpy)",
    "inputs/grad": "input left unchanged: tensor that requires grad",
    "dtype/float32": "dtype kept: float32",
    "dtype/float64": "dtype kept: float64",
    "device": "device kept (tensors on PyTorch's meta device, or the device argument)",
    "grad": "differentiable",
    "banned": "no banned API",
}
# per-row extras: prefixes of the argument, mask-shape, leading-dims, size and tie cells
EXTRA_PREFIXES = ("args/", "mask/", "lead/", "size/", "ties", "raises", "structure", "rules/")


@dataclass(frozen=True)
class Row:
    """One public function or method (``"Class.method"``) and its cells: ``{rule: COVERED | NA}``."""
    name: str
    cells: dict[str, object] = field(default_factory=dict, compare=False, hash=False)


NUMPY_FN = NA("a NumPy function: it takes NumPy arrays, not tensors")
NUMPY_DTYPE = NA("NumPy functions may compute and return float64 whatever the input's float type")
NUMPY_DEVICE = NA("NumPy arrays have no device")
NUMPY_GRAD = NA("NumPy: no autograd (the gradient is hand-written or numerical)")
TENSORS_ONLY = NA("takes tensors, not NumPy arrays")
NO_FLOAT_INPUT = NA("its tensor inputs are integer or bool tensors, which cannot require grad")
NO_TENSOR_INPUT = NA("takes no array or tensor")
BOOL_RESULT = NA("returns a torch.bool mask: no float dtype to keep")
NOT_DIFFERENTIABLE = NA("its result is not differentiable (booleans, integers, Python values)")
NO_BANS = NA("the exercise bans no API")
PLOT_DTYPE = NA("returns a drawing or token strings, not a tensor")
PLOT_DEVICE = NA("a plot or a ranking needs the values (on the CPU); a meta tensor has none")


def numpy_fn(name: str, **extra: object) -> Row:
    """A NumPy function: inputs left unchanged and the bans apply; no dtype, device or autograd."""
    return Row(name, {"inputs/ndarray": COVERED, "inputs/tensor": NUMPY_FN, "inputs/shared": NUMPY_FN,
                      "inputs/grad": NUMPY_FN, "dtype/float32": NUMPY_DTYPE, "dtype/float64": NUMPY_DTYPE,
                      "device": NUMPY_DEVICE, "grad": NUMPY_GRAD, "banned": COVERED, **extra})


def torch_fn(name: str, **cells: object) -> Row:
    """A torch function or method: every rule applies unless ``cells`` says why not
    (keywords: ``unchanged``, ``inputs_grad``, ``f32``, ``f64``, ``device``, ``grad``, ``banned``;
    other cells by their rule name)."""
    renamed = {"unchanged": "inputs/tensor", "inputs_grad": "inputs/grad", "f32": "dtype/float32",
               "f64": "dtype/float64"}
    given = {renamed.get(k, k): v for k, v in cells.items()}
    return Row(name, {"inputs/ndarray": TENSORS_ONLY, "inputs/tensor": COVERED, "inputs/shared": COVERED,
                      "inputs/grad": COVERED, "dtype/float32": COVERED, "dtype/float64": COVERED,
                      "device": COVERED, "grad": COVERED, "banned": COVERED, **given})


def plot_fn(name: str, **extra: object) -> Row:
    """A function that draws or ranks: its inputs left unchanged; no dtype, device or autograd."""
    return Row(name, {"inputs/ndarray": COVERED, "inputs/tensor": COVERED, "inputs/shared": COVERED,
                      "inputs/grad": COVERED, "dtype/float32": PLOT_DTYPE, "dtype/float64": PLOT_DTYPE,
                      "device": PLOT_DEVICE, "grad": NA("returns a drawing or token strings"),
                      "banned": COVERED, **extra})


def plain(name: str, **extra: object) -> Row:
    """A function or constructor of Python values (ints, strings): only its arguments apply."""
    return Row(name, {**{rule: NO_TENSOR_INPUT for rule in RULES}, "banned": COVERED, **extra})


# --------------------------------------------------------------------------- the registry row

@dataclass(frozen=True)
class Exercise:
    id: str                      # "ex1"
    folder: str                  # folder in solutions/, assignments/ and autograder/suites/
    module: str                  # student file stem; also the reference module name
    title: str
    names: tuple[str, ...]       # every public name of the contract
    banned: tuple[str, ...] = field(default=())  # dotted API names the student may not use
    numpy_only: tuple[str, ...] = field(default=())  # functions that must not touch torch/scipy
    # top-level classes/functions the bans apply to, with the module's functions they call (the
    # contract's "… in `AttentionClassifier`"); empty: the whole file
    banned_in: tuple[str, ...] = field(default=())
    points: float = 20.0         # the exercise's total; tests' `points` markers are weights within it
    # What student calls of this exercise load on first use (``sandbox.worker.WARM_UPS``:
    # "meta" device probes, "figures", an "optimizer" step): loaded by the zygote before it
    # forks this exercise's worker, never on the clock of a student's call.
    warm_up: tuple[str, ...] = field(default=("meta",))
    # In the default assignment (no --exercises)? False: opt-in, built only when named.
    default: bool = True
    # What `check` tells students the hidden tests check besides the public ones (themes,
    # never tests or values).
    hidden_coverage: str = ""
    # The contract's sentences of this exercise (its section of EXERCISES.md); with CONVENTIONS,
    # what its tests cite.
    contract: tuple[Sentence, ...] = field(default=(), compare=False)
    # Its rows of the coverage matrix (autograder.coverage).
    rows: tuple[Row, ...] = field(default=(), compare=False)

    @property
    def filename(self) -> str:
        return f"{self.module}.py"

    @property
    def notebook(self) -> str:
        return f"{self.module}.ipynb"

    @property
    def sentences(self) -> dict[str, Sentence]:
        """``{id: sentence}``: the conventions, then this exercise's own sentences."""
        return {s.id: s for s in (*CONVENTIONS, *self.contract)}

    def corpus_folder(self, root: Path) -> Path:
        """The kit's proof of this exercise's suite under the repository ``root``:
        ``mutants/<case>.diff`` and ``alternatives/<case>.py`` (tests/test_suites_corpus.py)."""
        return Path(root) / "tests" / "submissions" / self.id
