"""`python -m autograder scaffold exN_name --module mod`: every file of a new exercise.

Step 1 of docs/ADDING_AN_EXERCISE.md, done by the kit: the files that document lists (in its
``<!-- scaffold:files -->`` block, which :data:`FILES` must equal: ``tests/test_scaffold.py``
checks both), each with ``TODO`` where the instructor writes. The exercise's folder,
``autograder/suites/<folder>/``, is the exercise: ``exercise.py`` (its registry row, opt-in
with ``default=False``; the contract's sentences its tests cite; its coverage rows; ``check``'s
note), its hidden suite (every input drawn from :mod:`autograder.seeds`, never a literal seed)
and its public tests. The registry finds the folder by itself, and every per-exercise table
of the kit's own tests is a file in ``tests/submissions/<id>/``, written here too: no other
file of the kit is edited. Existing files are never overwritten.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# The files of an exercise, as docs/ADDING_AN_EXERCISE.md lists them (placeholders: <folder>,
# <module>, <id>). Order = the document's steps.
FILES: tuple[str, ...] = (
    "autograder/suites/<folder>/exercise.py",
    "reference/<module>.py",
    "tests/test_reference_<module>.py",
    "solutions/<folder>/<module>.py",
    "solutions/<folder>/README.md",
    "solutions/<folder>/<folder>.ipynb",
    "tests/test_solutions_<module>.py",
    "tests/submissions/<id>/stub_calls.py",
    "autograder/suites/<folder>/common.py",
    "autograder/suites/<folder>/test_values.py",
    "autograder/suites/<folder>/test_contract_rules.py",
    "autograder/suites/<folder>/public/test_public.py",
    "autograder/suites/<folder>/causes.py",
    "autograder/diagnosis/<id>.py",
    "tests/submissions/<id>/mutants/README.md",
    "tests/submissions/<id>/alternatives/README.md",
    "tests/submissions/<id>/nonfinite.py.tmpl",
)
_FOLDER = re.compile(r"^(ex\d+)_[a-z][a-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def paths(folder: str, module: str) -> list[str]:
    ex_id = folder.split("_", 1)[0]
    return [p.replace("<folder>", folder).replace("<module>", module).replace("<id>", ex_id) for p in FILES]


def _todo(what: str) -> str:
    return f'pytest.fail("TODO: {what}")'


def _functions(names: list[str]) -> str:
    return "\n\n".join(f'''def {name}(*args, **kwargs):
    """TODO: the contract of {name}: arguments, shapes, dtypes, conventions, errors.

    Students see this docstring (and only the code outside the solution region). It restates
    the published contract (EXERCISES.md) and may make it clearer; a rule it adds is no
    deduction (GRADER.md): grade only what the contract says.
    """
    ### BEGIN SOLUTION
    raise NotImplementedError("TODO: the model answer of {name}")
    ### END SOLUTION
''' for name in names)


def _notebook(module: str, title: str, names: list[str]) -> str:
    imports = "".join(f"    {n},\n" for n in names)
    cells = [
        ("markdown", f"# {title}\n\nTODO: the idea, told with the sentence \"The cat sat on the mat\"."),
        ("code", f"import importlib\n\nimport {module}                 # your file, next to this notebook\n"
                 f"importlib.reload({module})\nfrom {module} import (\n{imports})\n\n\n"
                 "def attempt(fn, *args, **kwargs):\n"
                 "    \"\"\"Call one of your functions; if it is not written yet, say so instead of crashing.\"\"\"\n"
                 "    try:\n        return fn(*args, **kwargs)\n    except NotImplementedError as exc:\n"
                 f"        print(f\"{{exc}} -> write it in {module}.py, re-run the import cell above, then this cell.\")\n"
                 "        return None"),
        ("markdown", "## TODO: a worked example by hand, then cells that call the student's functions via attempt(...)"),
    ]
    nb = {"cells": [{"cell_type": kind, "metadata": {}, "source": text,
                     **({"execution_count": None, "outputs": []} if kind == "code" else {})}
                    for kind, text in cells],
          "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                      "name": "python3"}, "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _exercise(ex_id: str, folder: str, module: str, title: str, names: list[str]) -> str:
    sentences = "".join(f'        Sentence("{n}", "TODO: {n}\'s sentence, quoted verbatim from EXERCISES.md"),\n'
                        for n in names)
    rows = "".join(f'        torch_fn("{n}", banned=NO_BANS),   # TODO: the rules that apply; NA("why") where one does not\n'
                   for n in names)
    return (f'"""{ex_id} · {title}, as data: the registry row, the contract\'s sentences its tests\n'
            f'cite, its coverage rows and ``check``\'s note (see :mod:`autograder.exercise`)."""\n'
            f"from __future__ import annotations\n\n"
            f"from autograder.exercise import COVERED, NA, NO_BANS, Exercise, Sentence, torch_fn  # noqa: F401\n\n"
            f"EXERCISE = Exercise(\n"
            f"    id={ex_id!r}, folder={folder!r}, module={module!r},\n"
            f"    title={title!r},\n"
            f"    names={tuple(names)!r},\n"
            f"    banned=(),                       # TODO: dotted APIs the student may not use\n"
            f"    default=False,                   # opt-in until it is ready (docs/ADDING_AN_EXERCISE.md, step 8)\n"
            f'    hidden_coverage="TODO: what the hidden tests check besides the public ones (themes, never values).",\n'
            f"    # every sentence of the exercise's section of EXERCISES.md that a point can be lost on\n"
            f"    contract=(\n{sentences}    ),\n"
            f"    # one row per public function and method: every rule of autograder.exercise.RULES, and\n"
            f"    # the row's own cells (args/…, mask/…, lead/…, size/… the smallest sizes of a shape rule)\n"
            f"    rows=(\n{rows}    ),\n"
            f")\n")


def _common(ex_id: str) -> str:
    return (f'"""Shared inputs and checks for the {ex_id} hidden suite (grader side; not a test file).\n\n'
            f"Every random input is drawn from the current test's derived seeds (:mod:`autograder.seeds`:\n"
            f"the build's secret, the submission and the test), never from a literal seed: no submission\n"
            f"can predict or replay them (tests/test_house.py fails on a literal seed). Public tests keep\n"
            f'literal seeds: students reproduce them.\n"""\n'
            f"from __future__ import annotations\n\nimport numpy as np\nimport torch\n\nfrom autograder import seeds\n\n\n"
            f"def gen(offset: int) -> torch.Generator:\n"
            f'    """The current test\'s torch generator number ``offset``."""\n'
            f"    return seeds.generator(offset)\n\n\n"
            f"def rng(offset: int) -> np.random.Generator:\n"
            f'    """The current test\'s NumPy generator number ``offset``."""\n'
            f"    return seeds.rng(offset)\n\n\n"
            f"# TODO: the inputs and comparisons the suite's tests share (checks.expect_close against the reference)\n")


def templates(folder: str, module: str, title: str, names: list[str]) -> dict[str, str]:
    """``{path: text}`` of the skeleton, in the order of :data:`FILES`."""
    ex_id = folder.split("_", 1)[0]
    first = names[0]
    suite = f"autograder.suites.{folder}"
    texts = [
        _exercise(ex_id, folder, module, title, names),
        f'"""{ex_id} reference: TODO, written for clarity and precision (float64 where it matters),\n'
        f'independently of solutions/; nanoGPT style, a shape comment on every tensor line."""\n'
        f"from __future__ import annotations\n\n__all__ = {names!r}\n\n\n"
        + "\n\n".join(f"def {n}(*args, **kwargs):\n    raise NotImplementedError(\"TODO: reference {n}\")\n"
                      for n in names),
        f'"""The {ex_id} oracle against an independent computation (loops, float64, a library)."""\n'
        f"import pytest\n\nfrom reference import {module} as ref  # noqa: F401\n\n\n"
        f"def test_{first}_by_an_independent_computation():\n    "
        + _todo(f"compare ref.{first} with a loop / float64 / library computation") + "\n",
        f'"""{title}.\n\nTODO: what students learn, and the conventions the grader checks (shapes,\n'
        f'dtype and device kept, inputs never modified, what is not allowed).\n"""\n'
        f"from __future__ import annotations\n\n\n" + _functions(names),
        f"# {title}\n\nTODO: one paragraph for students.\n\n## What to implement (`{module}.py`)\n\n"
        + "".join(f"- `{n}`: TODO.\n" for n in names)
        + f"\nThe docstrings in `{module}.py` are the full specification.\n\n"
          f"## How to work\n\n1. Open `{folder}.ipynb`. TODO.\n\n<!-- release:rules -->\n",
        _notebook(module, title, names),
        f'"""{ex_id}: the model answer in solutions/ agrees with reference/{module}.py."""\n'
        f"import pytest\n\n\n"
        f"def test_{first}_agrees_with_the_reference():\n    "
        + _todo(f"load solutions/{folder}/{module}.py by path and compare with the reference") + "\n",
        f'"""Valid arguments for {ex_id}\'s contract names (tests/test_release.py: the stub raises\n'
        f'NotImplementedError for each): ``name -> (args, forward_args or None)``."""\n\nCALLS = {{\n'
        + "".join(f"    {n!r}: ((), None),   # TODO: valid arguments\n" for n in names) + "}\n",
        _common(ex_id),
        f'"""{ex_id} · values against the reference (float32 and float64, shapes), one theme per file."""\n'
        f"import pytest\n\nfrom autograder.suites import checks  # noqa: F401\n"
        f"from {suite} import common  # noqa: F401\n\n\n"
        f"@pytest.mark.points(1)\n"
        f'@pytest.mark.contract("{first}")                       # the sentence(s) of exercise.py it grades\n'
        f'@pytest.mark.covers("{first}", "{first}:dtype/float32")   # the cells of the matrix it fills\n'
        f"def test_{first}_values(student):\n"
        f'    """{first}: TODO what this test judges (its title in results)"""\n    '
        + _todo(f"inputs from common.gen(offset); call student.{module}.{first}(...); judge with checks.expect_close") + "\n",
        f'"""{ex_id} · the contract\'s general rules: inputs of every kind left alone, the device kept\n'
        f'(meta tensors): autograder.suites.contract_rules."""\n'
        f"import pytest\n\nfrom autograder.suites.contract_rules import expect_inputs_unchanged, expect_on_meta  # noqa: F401\n"
        f"from {suite} import common  # noqa: F401\n\n\n"
        f"@pytest.mark.points(0.25)\n"
        f'@pytest.mark.contract("conventions/inputs")\n'
        f'@pytest.mark.covers("{first}", "{first}:inputs/tensor")\n'
        f"def test_{first}_leaves_inputs_unchanged(student, support):\n"
        f'    """{first} leaves its inputs unchanged"""\n    '
        + _todo(f"expect_inputs_unchanged(support, student.{module}.{first}, ...)") + "\n",
        f'"""{ex_id} · public tests: invariants and small hand-checkable values (shipped to students)."""\n'
        f"import pytest\n\n\n@pytest.mark.public\n@pytest.mark.points(1)\n"
        f'@pytest.mark.contract("{first}")\n'
        f"def test_public_{first}(student):\n"
        f'    """{first}: TODO a small case a student can check by hand"""\n    '
        + _todo("literal inputs, expected values shown with reveal=True") + "\n",
        f'"""The mistakes of {ex_id} the kit can name (ids ``{ex_id}.<name>``)."""\n'
        f"from __future__ import annotations\n\nfrom autograder.diagnosis.causes import Cause\n\n\n"
        f"class {ex_id.capitalize()}Cause(Cause):\n"
        f'    """A mistake of {ex_id}: ``.sentence`` is what the student reads."""\n\n'
        f"    # TODO: one member per usual mistake, e.g.\n"
        f"    # NO_SCALE = (\"{ex_id}.no_scale\", \"your result matches … without …: do …\")\n",
        f'"""{ex_id} known mistakes: each builds, from a test\'s inputs, the output of one usual mistake\n'
        f'(``{{cause: output}}`` for ``checks.expect_close(..., mistakes=...)``)."""\n'
        f"from __future__ import annotations\n\nfrom autograder.diagnosis import Candidates\n\n\n"
        f"def {first}(*inputs) -> Candidates:\n    return {{}}   # TODO: {{{ex_id.capitalize()}Cause.NAME: wrong output}}\n",
        f"# {ex_id} mutants\n\nTODO: at least 10 `<case>.diff` files, each one realistic bug as a patch of the\n"
        f"solution (format: tests/mutants.py; `make_patch` writes one from a buggy copy).\n",
        f"# {ex_id} alternatives\n\nTODO: at least 2 `<case>.py` files, whole correct solutions written in\n"
        f"another style (loops, vectorised, float64 then cast): each must keep full marks.\n",
        f"# {module}.py returning NaN (or inf: tests/test_nonfinite.py) of the right shapes everywhere,\n"
        f"# after that test's PRELUDE (FILL, _like(t, shape)): it must score 0.\n"
        + "".join(f"\n\ndef {n}(*args, **kwargs):\n    raise NotImplementedError  # TODO: return FILL values of the contract's shapes\n"
                  for n in names),
    ]
    return dict(zip(paths(folder, module), texts))


def scaffold(root: Path, folder: str, module: str, title: str, names: list[str]) -> list[Path]:
    """Write the skeleton under ``root`` (never over an existing file); returns the files written."""
    if not _FOLDER.match(folder):
        raise ValueError(f"the folder must look like ex7_topic (lower case), got {folder!r}")
    bad = [n for n in [module, *names] if not _NAME.match(n)]
    if bad:
        raise ValueError(f"not Python names: {', '.join(bad)}")
    written = []
    for rel, text in templates(folder, module, title, names).items():
        path = root / rel
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(args: argparse.Namespace) -> int:
    from autograder import repo_root
    root = Path(args.root or repo_root()).resolve()
    names = [n.strip() for n in (args.names or "").split(",") if n.strip()] or ["solve"]
    title = args.title or args.folder.split("_", 1)[1].replace("_", " ").capitalize()
    try:
        written = scaffold(root, args.folder, args.module, title, names)
    except ValueError as exc:
        print(f"scaffold: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"  new  {path.relative_to(root)}")
    print(f"  registry: {args.folder.split('_', 1)[0]} in autograder/suites/{args.folder}/exercise.py "
          "(default=False: opt-in)")
    print("next: docs/ADDING_AN_EXERCISE.md, step 1 (the registry row), then step 2")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="the exercise's folder, e.g. ex7_relative_attention (its id is ex7)")
    p.add_argument("--module", required=True, help="the student file's stem, e.g. relative")
    p.add_argument("--names", default=None, help="comma list of the contract's names (default: solve)")
    p.add_argument("--title", default=None, help="the exercise's title (default: from the folder)")
    p.add_argument("--root", default=None, help="the repository (default: the one this kit is in)")
