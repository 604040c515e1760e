"""`python -m autograder scaffold exN_name --module mod`: the skeleton of a new exercise.

Step 1 of docs/ADDING_AN_EXERCISE.md, done by the kit: the files that document lists (in its
``<!-- scaffold:files -->`` block, which :data:`FILES` must equal: ``tests/test_scaffold.py``
checks both), each with ``TODO`` where the instructor writes, and an opt-in registry entry
(``default=False``) in ``autograder/contract.py``, so the default assignment is unchanged until
the exercise is made a default one. Existing files are never overwritten.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# The files of an exercise, as docs/ADDING_AN_EXERCISE.md lists them (placeholders: <folder>,
# <module>, <id>). Order = the document's steps.
FILES: tuple[str, ...] = (
    "reference/<module>.py",
    "tests/test_reference_<module>.py",
    "solutions/<folder>/<module>.py",
    "solutions/<folder>/README.md",
    "solutions/<folder>/<folder>.ipynb",
    "tests/test_solutions_<module>.py",
    "tests/submissions/<id>/stub_calls.py",
    "autograder/suites/<folder>/common.py",
    "autograder/suites/<folder>/test_values.py",
    "autograder/suites/<folder>/public/test_public.py",
    "autograder/diagnosis/<id>.py",
    "tests/submissions/<id>/mutants/README.md",
    "tests/submissions/<id>/alternatives/README.md",
)
REGISTRY = "autograder/contract.py"
_FOLDER = re.compile(r"^(ex\d+)_[a-z][a-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def paths(folder: str, module: str) -> list[str]:
    ex_id = folder.split("_", 1)[0]
    return [p.replace("<folder>", folder).replace("<module>", module).replace("<id>", ex_id) for p in FILES]


def _functions(names: list[str]) -> str:
    return "\n\n".join(f'''def {name}(*args, **kwargs):
    """TODO: the contract of {name}: arguments, shapes, dtypes, conventions, errors.

    Students see this docstring (and only the code outside the solution region).
    """
    ### BEGIN SOLUTION
    raise NotImplementedError("TODO: the model answer of {name}")
    ### END SOLUTION
''' for name in names)


def _notebook(folder: str, module: str, title: str, names: list[str]) -> str:
    import json
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


def templates(folder: str, module: str, title: str, names: list[str]) -> dict[str, str]:
    """``{path: text}`` of the skeleton, in the order of :data:`FILES`."""
    ex_id = folder.split("_", 1)[0]
    first = names[0]
    todo_test = f'pytest.fail("TODO: {{what}}")'
    texts = [
        f'"""{ex_id} reference: TODO, written for clarity and precision (float64 where it matters),\n'
        f'independently of solutions/; nanoGPT style, a shape comment on every tensor line."""\n'
        f"from __future__ import annotations\n\n__all__ = {names!r}\n\n\n"
        + "\n\n".join(f"def {n}(*args, **kwargs):\n    raise NotImplementedError(\"TODO: reference {n}\")\n"
                      for n in names),
        f'"""The {ex_id} oracle against an independent computation (loops, float64, a library)."""\n'
        f"import pytest\n\nfrom reference import {module} as ref  # noqa: F401\n\n\n"
        f"def test_{first}_by_an_independent_computation():\n    "
        + todo_test.format(what=f"compare ref.{first} with a loop / float64 / library computation") + "\n",
        f'"""{title}.\n\nTODO: what students learn, and the conventions the grader checks (shapes,\n'
        f'dtype and device kept, inputs never modified, what is not allowed).\n"""\n'
        f"from __future__ import annotations\n\n\n" + _functions(names),
        f"# {title}\n\nTODO: one paragraph for students.\n\n## What to implement (`{module}.py`)\n\n"
        + "".join(f"- `{n}`: TODO.\n" for n in names)
        + f"\nThe docstrings in `{module}.py` are the full specification.\n\n"
          f"## How to work\n\n1. Open `{folder}.ipynb`. TODO.\n\n<!-- release:rules -->\n",
        _notebook(folder, module, title, names),
        f'"""{ex_id}: the model answer in solutions/ agrees with reference/{module}.py."""\n'
        f"import pytest\n\n\n"
        f"def test_{first}_agrees_with_the_reference():\n    "
        + todo_test.format(what=f"load solutions/{folder}/{module}.py by path and compare with the reference") + "\n",
        f'"""Valid arguments for {ex_id}\'s contract names (tests/test_release.py calls each stub):\n'
        f'``name -> (args, forward_args or None)``."""\n\nCALLS = {{\n'
        + "".join(f"    {n!r}: ((), None),   # TODO: valid arguments\n" for n in names) + "}\n",
        f'"""Shared inputs and checks for the {ex_id} hidden suite (grader side; not a test file).\n\n'
        f'Every random input comes from :func:`gen` (one place: hidden seeds may be derived differently).\n"""\n'
        f"from __future__ import annotations\n\nimport torch\n\n"
        f"SEED = 0                       # TODO: the hidden base seed for {ex_id} (not a public test's)\n\n\n"
        f"def gen(offset: int) -> torch.Generator:\n    return torch.Generator().manual_seed(SEED + offset)\n",
        f'"""{ex_id} · values against the reference (fixed seeds, float32 and float64, shapes)."""\n'
        f"import pytest\n\nfrom autograder.suites import checks  # noqa: F401\n"
        f"from autograder.suites.{folder} import common  # noqa: F401\n\n\n"
        f"@pytest.mark.points(1)\ndef test_{first}_values(student):\n"
        f'    """{first}: TODO what this test judges (its title in results)"""\n    '
        + todo_test.format(what=f"call student.{module}.{first}(...) and judge with checks.expect_close") + "\n",
        f'"""{ex_id} · public tests: invariants and small hand-checkable values (shipped to students)."""\n'
        f"import pytest\n\n\n@pytest.mark.public\n@pytest.mark.points(1)\n"
        f"def test_public_{first}(student):\n"
        f'    """{first}: TODO a small case a student can check by hand"""\n    '
        + todo_test.format(what="literal inputs, expected values shown with reveal=True") + "\n",
        f'"""{ex_id} known mistakes: each builds, from a test\'s inputs, the output of one usual mistake\n'
        f'(``{{hint: output}}`` for ``checks.expect_close(..., mistakes=...)``)."""\n'
        f"from __future__ import annotations\n\nfrom autograder.diagnosis import Candidates\n\n\n"
        f"def {first}(*inputs) -> Candidates:\n    return {{}}   # TODO: {{\"your result matches …\": wrong output}}\n",
        f"# {ex_id} mutants\n\nTODO: at least 10 `<case>.diff` files, each one realistic bug as a patch of the\n"
        f"solution (format: tests/mutants.py; `make_patch` writes one from a buggy copy).\n",
        f"# {ex_id} alternatives\n\nTODO: at least 2 `<case>.py` files, whole correct solutions written in\n"
        f"another style (loops, vectorised, float64 then cast): each must keep full marks.\n",
    ]
    return dict(zip(paths(folder, module), texts))


def registry_entry(folder: str, module: str, title: str, names: list[str]) -> str:
    ex_id = folder.split("_", 1)[0]
    return (f"    Exercise(\n        id={ex_id!r}, folder={folder!r}, module={module!r},\n"
            f"        title={title!r},\n        names={tuple(names)!r},\n"
            f"        default=False,                   # opt-in until it is ready (docs/ADDING_AN_EXERCISE.md)\n"
            f"    ),\n")


def register(root: Path, folder: str, module: str, title: str, names: list[str]) -> None:
    """Append the entry to ``EXERCISES`` in contract.py (before the tuple's closing line)."""
    path = root / REGISTRY
    text = path.read_text(encoding="utf-8")
    if re.search(rf"folder=[\"']{re.escape(folder)}[\"']", text):
        return
    anchor = re.search(r"^\)\n\n\ndef _built_points", text, flags=re.M)
    if anchor is None:
        raise ValueError(f"{REGISTRY}: the end of EXERCISES was not found; add the entry by hand:\n"
                         + registry_entry(folder, module, title, names))
    path.write_text(text[:anchor.start()] + registry_entry(folder, module, title, names)
                    + text[anchor.start():], encoding="utf-8")


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
    register(root, folder, module, title, names)
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
    print(f"  registry: {args.folder.split('_', 1)[0]} in {REGISTRY} (default=False: opt-in)")
    print("next: docs/ADDING_AN_EXERCISE.md, step 2")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="the exercise's folder, e.g. ex7_relative_attention (its id is ex7)")
    p.add_argument("--module", required=True, help="the student file's stem, e.g. relative")
    p.add_argument("--names", default=None, help="comma list of the contract's names (default: solve)")
    p.add_argument("--title", default=None, help="the exercise's title (default: from the folder)")
    p.add_argument("--root", default=None, help="the repository (default: the one this kit is in)")
