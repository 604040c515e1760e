"""What the release's READMEs say: rules and checking advice rendered from the contract.

Pure functions of :mod:`autograder.contract` data, used by the release pipeline
(:mod:`autograder.packaging.release`).
"""
from __future__ import annotations

import textwrap
from typing import Iterable, Sequence

from autograder.contract import Exercise

ALLOWED_IMPORTS = "the standard library, `numpy`, `torch` and `matplotlib`"


def _bullets(items: Iterable[str], width: int = 90) -> list[str]:
    """Markdown bullets wrapped at ``width`` (long code spans are never split)."""
    return [textwrap.fill(item, width=width, initial_indent="- ", subsequent_indent="  ",
                          break_long_words=False, break_on_hyphens=False)
            for item in items]


def render_rules(ex: Exercise) -> str:
    """The exercise's rules, rendered from :mod:`autograder.contract`."""
    names = ", ".join(f"`{n}`" for n in ex.names)
    items = [
        f"Implement in `{ex.filename}`: {names}. Keep every name and signature as given; "
        "the docstrings are the specification.",
        f"Imports: only {ALLOWED_IMPORTS}. The file must be self-contained (do not import "
        "your other exercise files).",
    ]
    if ex.banned:
        items.append("Not allowed: " + ", ".join(f"`{b}`" for b in ex.banned) + ".")
    if ex.numpy_only:
        items.append("NumPy only (no `torch`, no `scipy`) in: "
                     + ", ".join(f"`{n}`" for n in ex.numpy_only) + ".")
    items += [
        "Masks are boolean and `True` means \"may attend\" (the convention of "
        "`torch.nn.functional.scaled_dot_product_attention`), broadcastable to the scores' "
        "shape `(..., n, m)`. Fill masked scores with `-inf` or `-1e9`: both are accepted.",
        "Never modify an input in place. Torch functions keep the input's dtype and device "
        "and stay differentiable (no `.detach()`, `.numpy()` or `.item()` on the way).",
        "No dropout, and no randomness beyond what a function's arguments ask for.",
    ]
    return "\n".join(["## Rules", "", *_bullets(items), ""])


def render_checking(ex: Exercise, has_public_tests: bool) -> str:
    """The "Checking your work" section of an exercise's README."""
    items = [f"Run the notebook `{ex.folder}.ipynb` top to bottom: its cells call your "
             "functions and show what they produce."]
    if has_public_tests:
        items.append(f"Run the public tests from the folder above this one (the one holding "
                     f"`autograder/`): `python -m autograder check {ex.id}`. They check part of the "
                     "contract, and explain each failure; the grader's hidden tests check all of it.")
    items.append(f"Submit `{ex.filename}`. The notebook is not graded.")
    return "\n".join(["## Checking your work", "", *_bullets(items), ""])


def render_overview(exercises: Sequence[Exercise]) -> str:
    """``assignments/README.md``: the released exercises and the rules for all of them."""
    rows = "\n".join(
        f"| {ex.id} | [{ex.title}]({ex.folder}/README.md) "
        f"| `{ex.folder}/{ex.filename}` | `{ex.folder}/{ex.folder}.ipynb` |"
        for ex in exercises)
    return f"""# Attention mechanisms — programming exercises

Each folder is one exercise: a Python file to complete, a notebook that teaches the idea
and calls your code, a short README with the rules, and (where released) public tests.

| id | exercise | you complete | companion notebook |
|---|---|---|---|
{rows}

## Getting started

```bash
python -m pip install numpy torch matplotlib jupyter pytest
cd {exercises[0].folder if exercises else "ex1_attention"}
jupyter notebook
```

Open the file you complete and replace every `raise NotImplementedError(...)` with your
code. Re-run the notebook's import cell after each edit: it reloads your file.

Check your work with the public tests, from this folder (the one holding `autograder/`):

```bash
python -m autograder check            # every exercise
python -m autograder check ex1        # one of them
```

## Rules for every exercise

- Imports: only {ALLOWED_IMPORTS}. Each file stands alone: do not import your
  other exercise files.
- Masks are boolean and `True` means "may attend"; masked scores may be filled with
  `-inf` or `-1e9`.
- Never modify inputs in place. PyTorch functions keep dtype and device and stay
  differentiable.
- Keep names and signatures exactly as given: the grader calls them.

## Submitting

Submit the completed `.py` files (for example `attention.py`). The notebooks are for
learning and are not graded.
"""
