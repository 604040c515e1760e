"""`python -m autograder scaffold` and docs/ADDING_AN_EXERCISE.md, followed literally.

The document's ``<!-- scaffold:files -->`` table is the list of files an exercise consists
of; the command must write exactly those (in the document's order), in the exercise's own
folder and the kit's per-exercise test data, touching no other file, with an opt-in registry
row the registry finds and a hidden suite that draws from ``autograder/seeds.py``. Then the
guide is followed on a small exercise, step by step (its contract section, the filled files,
``release``, the coverage document, ``grade``, ``build --self-grade``), and the kit's own
checks run for it (seeds, sentences and coverage, mutants and alternatives, NaN everywhere),
so that the guide cannot go stale. Run in temporary copies of the kit, never in the repository.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import scaffold
from helpers import ROOT, SPEC_NAME, published_contract
from mutants import as_submitted, make_patch

DOC = ROOT / "docs" / "ADDING_AN_EXERCISE.md"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "BUILD_INFO.json", "public_worth.json", "SEED_SECRET",
                                ".pytest_cache")


def _doc_files() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- scaffold:files -->", 1)[1].split("<!-- /scaffold:files -->", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\|\s*\d+\s*\|\s*`([^`]+)`", block, flags=re.M)]


def test_the_document_lists_what_the_scaffold_writes():
    assert _doc_files() == list(scaffold.FILES)
    text = DOC.read_text(encoding="utf-8")
    for path in scaffold.FILES:                        # every step's file is named in its step
        step = next(m for m in re.finditer(rf"^\|\s*(\d+)\s*\|\s*`{re.escape(path)}`", text, re.M))
        assert f"### {step.group(1)}." in text, path


def _run(root: Path, *args: str, module: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", *args] if module else [sys.executable, "-c", args[0]]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


def _copy_kit(tmp: Path, tops: tuple[str, ...] = ("autograder", "reference", "docs")) -> Path:
    kit = tmp / "kit"
    for top in tops:
        shutil.copytree(ROOT / top, kit / top, ignore=IGNORE)
    for name in ("pyproject.toml", "README.md"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, kit / name)
    return kit


@pytest.fixture(scope="module")
def kit_copy(tmp_path_factory) -> Path:
    kit = _copy_kit(tmp_path_factory.mktemp("scaffold"))
    done = _run(kit, "autograder", "scaffold", "ex9_demo_topic", "--module", "demo", "--names", "alpha,Beta",
                "--root", str(kit))
    assert done.returncode == 0, done.stdout + done.stderr
    return kit


def test_the_scaffold_writes_the_documented_files_and_nothing_else(kit_copy):
    for rel in scaffold.paths("ex9_demo_topic", "demo"):
        path = kit_copy / rel
        assert path.is_file(), rel
        assert "TODO" in path.read_text(encoding="utf-8"), rel
    written = {p.relative_to(kit_copy).as_posix() for p in kit_copy.rglob("*") if p.is_file()
               and ("ex9" in p.as_posix() or "demo" in p.name)}
    assert written == set(scaffold.paths("ex9_demo_topic", "demo"))
    changed = [p.relative_to(kit_copy).as_posix() for p in (kit_copy / "autograder").rglob("*.py")
               if "ex9" not in p.as_posix() and "demo" not in p.name
               and p.read_bytes() != (ROOT / p.relative_to(kit_copy)).read_bytes()]
    assert changed == []                               # no table outside the exercise's files


def test_the_registry_finds_the_new_exercise_opt_in(kit_copy):
    done = _run(kit_copy, "from autograder import contract as c; ex = c.BY_ID['ex9']; "
                "print(repr((ex.folder, ex.module, ex.names, ex.default, [e.id for e in c.DEFAULT], "
                "[e.id for e in c.select('all')])))", module=False)
    assert done.returncode == 0, done.stderr
    from autograder import contract
    folder, module, names, default, default_ids, all_ids = eval(done.stdout)
    assert (folder, module, names, default) == ("ex9_demo_topic", "demo", ("alpha", "Beta"), False)
    assert default_ids == [ex.id for ex in contract.DEFAULT]           # the default assignment is unchanged
    assert all_ids == [ex.id for ex in contract.EXERCISES] + ["ex9"]


def test_the_hidden_suite_draws_from_the_seeds_module(kit_copy):
    from source_rules import literal_seeds
    suite = kit_copy / "autograder" / "suites" / "ex9_demo_topic"
    assert "from autograder import seeds" in (suite / "common.py").read_text()
    for path in suite.glob("*.py"):
        assert literal_seeds(path.read_text()) == [], path.name
    assert literal_seeds("SEED = 0\n") == ["line 1: SEED = 0"]          # what the scaffold used to write


def test_scaffold_twice_changes_nothing(kit_copy):
    row = kit_copy / "autograder" / "suites" / "ex9_demo_topic" / "exercise.py"
    readme = (kit_copy / "solutions" / "ex9_demo_topic" / "README.md")
    before = row.read_text()
    readme.write_text(readme.read_text() + "edited\n")
    done = _run(kit_copy, "autograder", "scaffold", "ex9_demo_topic", "--module", "demo", "--root", str(kit_copy))
    assert done.returncode == 0, done.stderr
    assert row.read_text() == before
    assert readme.read_text().endswith("edited\n")


def test_the_skeleton_releases_and_its_suite_collects(kit_copy):
    code = ("import sys; from pathlib import Path\n"
            "from autograder.packaging import release as rel\n"
            "r = rel.build_release(Path('.'), 'ex9')\n"
            "stub = r.files['ex9_demo_topic/demo.py']\n"
            "ns = {}; exec(compile(stub, 'demo.py', 'exec'), ns)\n"
            "for name in ('alpha', 'Beta'):\n"
            "    try: ns[name]()\n"
            "    except NotImplementedError: pass\n"
            "    else: sys.exit(name + ' does not raise')\n"
            "assert 'ex9_demo_topic/tests/test_public.py' in r.files, sorted(r.files)\n"
            "print('released', len(r.files))\n")
    done = _run(kit_copy, code, module=False)
    assert done.returncode == 0 and "released" in done.stdout, done.stdout + done.stderr
    collect = _run(kit_copy, "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                   "-c", "autograder/suites/pytest.ini", "autograder/suites/ex9_demo_topic")
    assert collect.returncode == 0, collect.stdout + collect.stderr
    assert all(name in collect.stdout for name in ("test_alpha_values", "test_alpha_leaves_inputs_unchanged",
                                                    "test_public_alpha"))


def test_bad_names_are_refused(tmp_path):
    with pytest.raises(ValueError, match="ex7_topic"):
        scaffold.scaffold(tmp_path, "seven", "m", "T", ["f"])
    with pytest.raises(ValueError, match="not Python names"):
        scaffold.scaffold(tmp_path, "ex7_x", "my-module", "T", ["f"])


# --------------------------------------------------------------------------- the guide, followed

FOLDER, MODULE, EX = "ex9_scale_rows", "scale", "ex9"

SECTION = """

---

## ex9 — Scaling rows · file `scale.py`

| name | signature | returns |
|---|---|---|
| `scale_rows` | `(x: Tensor, s: Tensor) -> Tensor` | `x (..., n, d)`, `s (..., n)` with the same leading dims: row `i` of `x` multiplied by `s[..., i]`; the shape of `x` |

Not allowed: nothing beyond the conventions above.
"""

EXERCISE_ROW = '''"""ex9 · Scaling rows, as data (see :mod:`autograder.exercise`)."""
from __future__ import annotations

from autograder.exercise import COVERED, NO_BANS, Exercise, Sentence, torch_fn

EXERCISE = Exercise(
    id="ex9", folder="ex9_scale_rows", module="scale",
    title="Scaling rows",
    names=("scale_rows",),
    default=False,
    hidden_coverage="values on other shapes and leading dims, in float32 and float64; gradients; inputs left alone.",
    contract=(
        Sentence("scale_rows/signature", "`(x: Tensor, s: Tensor) -> Tensor`"),
        Sentence("scale_rows/rows", "`x (..., n, d)`, `s (..., n)` with the same leading dims: row `i` of `x` "
                                    "multiplied by `s[..., i]`; the shape of `x`"),
    ),
    rows=(
        torch_fn("scale_rows", banned=NO_BANS, **{"lead/0": COVERED, "lead/several": COVERED,
                                                   "size/one row": COVERED}),
    ),
)
'''

REFERENCE = '''"""ex9 reference: each row of x scaled by its entry of s."""
from __future__ import annotations

import torch

__all__ = ["scale_rows"]


def scale_rows(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return x * s.unsqueeze(-1)                                  # (..., n, d) * (..., n, 1)
'''

REFERENCE_TEST = '''"""The ex9 oracle against explicit loops."""
import torch

from reference import scale as ref


def test_scale_rows_by_loops():
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    s = torch.randn(2, 3, dtype=torch.float64)
    want = torch.stack([torch.stack([x[b, i] * s[b, i] for i in range(3)]) for b in range(2)])
    assert torch.equal(ref.scale_rows(x, s), want)
'''

SOLUTION = '''"""Scaling rows: the rows of a tensor, each multiplied by its own factor.

Torch functions keep the dtype and device of their inputs and stay differentiable; inputs are
never modified.
"""
from __future__ import annotations

import torch


def scale_rows(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Row ``i`` of ``x (..., n, d)`` multiplied by ``s[..., i]`` (``s (..., n)``, the same
    leading dims); returns a tensor of ``x``'s shape, dtype and device."""
    ### BEGIN SOLUTION
    return x * s.unsqueeze(-1)
    ### END SOLUTION
'''

SOLUTION_TEST = '''"""ex9: the model answer agrees with the reference."""
import importlib.util
from pathlib import Path

import torch

from reference import scale as ref

ROOT = Path(__file__).resolve().parents[1]


def test_scale_rows_agrees_with_the_reference():
    path = ROOT / "solutions" / "ex9_scale_rows" / "scale.py"
    spec = importlib.util.spec_from_file_location("solution_scale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, s = torch.randn(3, 4, 5), torch.randn(3, 4)
    assert torch.allclose(module.scale_rows(x, s), ref.scale_rows(x, s))
'''

STUB_CALLS = '''"""Valid arguments for ex9's contract names (tests/test_release.py)."""
import torch

CALLS = {"scale_rows": ((torch.zeros(2, 3), torch.ones(2)), None)}
'''

COMMON_CHECK = '''

def expect_scaled(student, x: torch.Tensor, s: torch.Tensor, what: str) -> None:
    """``student.scale.scale_rows(x, s)`` against the reference, in ``x``'s dtype."""
    inputs = checks.describe_inputs(x=x, s=s)
    got = student.scale.scale_rows(x, s)
    checks.expect_type(got, torch.Tensor, what)
    checks.expect_shape(got, tuple(x.shape), what, inputs)
    checks.expect_dtype(got, x.dtype, what)
    rtol, atol = checks.tolerance(x.dtype)
    checks.expect_close(got, ref.scale_rows(x.double(), s.double()), what, inputs=inputs, rtol=rtol, atol=atol)
'''

VALUES = '''"""ex9 · scale_rows: values, dtypes, leading dims, the smallest sizes, gradients."""
import pytest
import torch

from autograder.suites import checks
from autograder.suites.ex9_scale_rows import common


def _xs(offset: int, *lead_n_d: int, dtype=torch.float32):
    g = common.gen(offset)
    x = torch.randn(*lead_n_d, generator=g, dtype=torch.float64).to(dtype)
    s = torch.randn(*lead_n_d[:-1], generator=g, dtype=torch.float64).to(dtype)
    return x, s


@pytest.mark.points(2)
@pytest.mark.contract("scale_rows/rows", "scale_rows/signature", "conventions/dtype")
@pytest.mark.covers("scale_rows", "scale_rows:dtype/float32")
def test_scale_rows_values(student):
    """scale_rows multiplies row i of x by s[..., i] (float32)"""
    x, s = _xs(1, 3, 4, 5)
    common.expect_scaled(student, x, s, "scale_rows(x, s)")


@pytest.mark.points(1)
@pytest.mark.contract("scale_rows/rows", "conventions/dtype")
@pytest.mark.covers("scale_rows", "scale_rows:dtype/float64")
def test_scale_rows_float64(student):
    """scale_rows keeps float64"""
    x, s = _xs(2, 2, 3, 4, dtype=torch.float64)
    common.expect_scaled(student, x, s, "scale_rows(float64 x, s)")


@pytest.mark.points(1)
@pytest.mark.contract("scale_rows/rows")
@pytest.mark.covers("scale_rows", "scale_rows:lead/0", "scale_rows:lead/several")
def test_scale_rows_leading_dims(student):
    """scale_rows with no leading dim and with two leading dims"""
    common.expect_scaled(student, *_xs(3, 4, 5), "scale_rows(x (n, d), s (n,))")
    common.expect_scaled(student, *_xs(4, 2, 3, 4, 5), "scale_rows(x (2, 3, n, d), s (2, 3, n))")


@pytest.mark.points(0.5)
@pytest.mark.contract("scale_rows/rows")
@pytest.mark.covers("scale_rows", "scale_rows:size/one row")
def test_scale_rows_one_row(student):
    """scale_rows with one row (n = 1)"""
    common.expect_scaled(student, *_xs(5, 3, 1, 4), "scale_rows(x (3, 1, d), s (3, 1))")


@pytest.mark.points(1)
@pytest.mark.contract("conventions/differentiable")
@pytest.mark.covers("scale_rows", "scale_rows:grad")
def test_scale_rows_differentiable(student, support):
    """scale_rows is differentiable with respect to x and s"""
    x, s = _xs(6, 2, 3, 4, dtype=torch.float64)
    g = torch.randn(2, 3, 4, generator=common.gen(7), dtype=torch.float64)
    with checks.calling("scale.scale_rows"):
        res = support.autograd.grads(student.scale.scale_rows, [x, s], {}, [g], [0, 1])
    if res["error"] or not res["requires_grad"][0] or any(grad is None for grad in res["grads"]):
        checks.fail("scale_rows: no gradient reaches x or s (is something on the path detached?)")
    checks.expect_close(res["grads"][0], g * s.unsqueeze(-1), "the gradient w.r.t. x", rtol=1e-9, atol=1e-12)
    checks.expect_close(res["grads"][1], (g * x).sum(-1), "the gradient w.r.t. s", rtol=1e-9, atol=1e-12)
'''

RULES = '''"""ex9 · the contract's general rules: inputs of every kind left alone, the device kept."""
import pytest
import torch

from autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta, kind_id
from autograder.suites.ex9_scale_rows import common


@pytest.mark.points(0.25)
@pytest.mark.parametrize("kind", [pytest.param(k, id=kind_id(k), marks=pytest.mark.covers(
    "scale_rows", f"scale_rows:inputs/{k}")) for k in ("tensor", "shared", "grad")])
@pytest.mark.contract("conventions/inputs")
def test_scale_rows_leaves_inputs_unchanged(student, support, kind):
    """scale_rows leaves x and s unchanged, whatever kind of tensor they are"""
    g = common.gen(10)
    x, s = torch.randn(2, 3, 4, generator=g, dtype=torch.float64), torch.randn(2, 3, generator=g, dtype=torch.float64)
    expect_inputs_unchanged(support, student.scale.scale_rows, "scale.scale_rows", [x, s], ["x", "s"], kind)


@pytest.mark.points(0.5)
@pytest.mark.contract("conventions/device")
@pytest.mark.covers("scale_rows", "scale_rows:device")
def test_scale_rows_keeps_the_device(student, support):
    """scale_rows keeps the device (meta tensors in, meta tensors out)"""
    g = common.gen(11)
    x, s = torch.randn(2, 3, 4, generator=g), torch.randn(2, 3, generator=g)
    expect_on_meta(support, student.scale.scale_rows, "scale.scale_rows", [x, s], outputs=["the result"],
                   dtype="float32", shapes=[(2, 3, 4)])
'''

PUBLIC = '''"""ex9 · public tests: a small case checked by hand (shipped to students)."""
import pytest
import torch

from autograder.suites.checks import expect_close


@pytest.mark.public
@pytest.mark.points(1)
@pytest.mark.contract("scale_rows/rows")
def test_public_scale_rows(student):
    """scale_rows on a 2 × 2 example"""
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    got = student.scale.scale_rows(x, torch.tensor([2.0, 0.5]))
    expect_close(got, torch.tensor([[2.0, 4.0], [1.5, 2.0]]), "scale_rows(x, s)", reveal=True)
'''

NONFINITE = '''def scale_rows(x, s):
    return _like(x, x.shape)
'''

# (case, expect-fail words, the buggy line replacing `return x * s.unsqueeze(-1)`)
MUTANTS = [
    ("in_place", "leaves x and s unchanged", "return x.mul_(s.unsqueeze(-1))"),
    ("detached", "differentiable", "return (x * s.unsqueeze(-1)).detach()"),
    ("to_float32", "keeps float64", "return x.float() * s.float().unsqueeze(-1)"),
    ("to_float64", "multiplies row i", "return x.double() * s.double().unsqueeze(-1)"),
    ("divided", "multiplies row i", "return x / s.unsqueeze(-1)"),
    ("squared", "multiplies row i", "return x * s.unsqueeze(-1) ** 2"),
    ("absolute", "multiplies row i", "return x * s.abs().unsqueeze(-1)"),
    ("row_sum", "multiplies row i", "return x * s.sum(-1, keepdim=True).unsqueeze(-1)"),
    ("squeezed", "one row", "return x * s.squeeze().unsqueeze(-1)"),
    ("values_read", "keeps the device", "return x * torch.tensor(s.tolist(), dtype=x.dtype).unsqueeze(-1)"),
    ("flattened", "leading dim", "return (x.reshape(-1, x.shape[-1]) * s.reshape(-1, 1)).reshape(-1, x.shape[-2], x.shape[-1])"),
]
# each mutant's label (the causes any of which is a right hint, tests/hints.py): the general
# causes where the mistake is one, "none" where only the new exercise's own diagnosis could name it
LABELS = {
    "in_place": "general.in_place", "detached": "general.detached",
    "to_float32": "general.cast_to_float32 | general.dtype_mix",
    "to_float64": "general.float64_enters | general.dtype_mix", "squeezed": "general.squeeze_all",
    "values_read": "general.value_read_out | general.tensor_on_default_device",
}
ALTERNATIVES = {
    "einsum": "return torch.einsum('...nd,...n->...nd', x, s)",
    "loop": "return torch.stack([x[..., i, :] * s[..., i, None] for i in range(x.shape[-2])], dim=-2)",
}


def _fill_in(kit: Path) -> None:
    """Steps 0-6 of the guide, done as an instructor would: the contract's section, then every
    scaffolded file filled in for a one-function exercise."""
    suite = kit / "autograder" / "suites" / FOLDER
    corpus = kit / "tests" / "submissions" / EX
    files = {
        suite / "exercise.py": EXERCISE_ROW,
        kit / "reference" / f"{MODULE}.py": REFERENCE,
        kit / "tests" / f"test_reference_{MODULE}.py": REFERENCE_TEST,
        kit / "solutions" / FOLDER / f"{MODULE}.py": SOLUTION,
        kit / "tests" / f"test_solutions_{MODULE}.py": SOLUTION_TEST,
        corpus / "stub_calls.py": STUB_CALLS,
        suite / "test_values.py": VALUES,
        suite / "test_contract_rules.py": RULES,
        suite / "public" / "test_public.py": PUBLIC,
        corpus / "nonfinite.py.tmpl": NONFINITE,
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    common = suite / "common.py"
    common.write_text(common.read_text().replace("from autograder import seeds\n",
                                                 "import reference.scale as ref\nfrom autograder import seeds\n"
                                                 "from autograder.suites import checks\n") + COMMON_CHECK)
    base = as_submitted(SOLUTION)
    line = "    return x * s.unsqueeze(-1)\n"
    for case, words, bug in MUTANTS:
        label = LABELS.get(case, "none (a formula mistake: the exercise's own causes would name it)")
        patch = make_patch(base, base.replace(line, f"    {bug}\n"), [f"# expect-fail: {words}", f"# cause-id: {label}"])
        (corpus / "mutants" / f"{case}.diff").write_text(patch, encoding="utf-8")
    for case, body in ALTERNATIVES.items():
        (corpus / "alternatives" / f"{case}.py").write_text(base.replace(line, f"    {body}\n"), encoding="utf-8")


@pytest.mark.slow
def test_the_guide_followed_literally_gives_an_exercise_that_keeps_every_guarantee(tmp_path):
    kit = _copy_kit(tmp_path, ("autograder", "reference", "docs", "solutions", "assignments", "tests", "bench"))
    spec = tmp_path / SPEC_NAME                                        # beside the checkout, as the guide says
    spec.parent.mkdir(parents=True)
    spec.write_text(published_contract().read_text(encoding="utf-8") + SECTION, encoding="utf-8")      # step 0

    def step(*args: str, timeout: float = 900) -> str:
        done = _run(kit, *args, timeout=timeout)
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    step("autograder", "scaffold", FOLDER, "--module", MODULE, "--names", "scale_rows",
         "--title", "Scaling rows")                                                           # step 1
    _fill_in(kit)                                                                            # steps 1-6
    step("pytest", "-q", "-p", "no:cacheprovider", f"tests/test_reference_{MODULE}.py",
         f"tests/test_solutions_{MODULE}.py")                                               # steps 2, 3
    step("autograder", "release")                                                            # step 4
    (kit / "docs" / "COVERAGE.md").write_text(step("autograder.coverage"), encoding="utf-8")  # step 5

    def graded(folder: str) -> dict:
        out = tmp_path / f"{folder.replace('/', '_')}.json"
        step("autograder", "grade", folder, "--exercises", EX, "--results", str(out))
        return json.loads(out.read_text())

    assert graded(f"solutions/{FOLDER}")["score"] == 20
    stub = graded(f"assignments/{FOLDER}")
    assert stub["score"] == 0 and len(stub["tests"]) >= 9

    # the kit's own checks, for the new exercise: seeds, sentences and coverage, the release's
    # stub, mutants and alternatives, NaN everywhere
    step("pytest", "-q", "-p", "no:cacheprovider", "tests/test_house.py", "tests/test_coverage_matrix.py",
         "tests/test_release.py::test_the_argument_table_covers_the_contract",
         "tests/test_nonfinite.py", "-k", f"{EX} or house or coverage or argument_table", timeout=1800)
    step("pytest", "-q", "-p", "no:cacheprovider", "tests/test_suites_corpus.py", "-k", EX, timeout=1800)

    # step 7: the exercise alone, built and graded as Gradescope would (solutions full marks, stubs 0)
    built = step("autograder", "build", "--exercises", EX, "--out", str(tmp_path / "dist"), "--self-grade",
                 timeout=1800)
    assert re.search(r"ex9 Scaling rows\s+20/20\s+0/20", built), built[-2000:]


# the guide's commands that the walk-through above runs, as the guide writes them
WALKTHROUGH = (
    "python -m autograder scaffold ",
    "python -m pytest tests/test_reference_<module>.py",
    "python -m pytest tests/test_solutions_<module>.py",
    "python -m autograder release ",
    "python -m autograder.coverage > docs/COVERAGE.md",
    "python -m pytest tests/test_coverage_matrix.py",
    "python -m pytest tests/test_house.py",
    "python -m autograder grade solutions/<folder> --exercises <id>",
    "python -m autograder grade assignments/<folder> --exercises <id>",
    "python -m pytest tests/test_suites_corpus.py -k <id>",
    "python -m pytest tests/test_nonfinite.py -k <id>",
    "python -m autograder build --exercises <id> --out /tmp/dist-<id> --self-grade",
)


def test_the_guide_gives_every_command_the_walk_through_runs():
    """The walk-through runs the guide's commands; if the guide drops one, this fails."""
    text = DOC.read_text(encoding="utf-8")
    missing = [command for command in WALKTHROUGH if command not in text]
    assert not missing, missing
