"""What the release's READMEs say: rules and checking advice rendered from the contract.

Pure functions of :mod:`autograder.contract` data, used by the release pipeline
(:mod:`autograder.packaging.release`).
"""
from __future__ import annotations

import textwrap
from typing import Iterable, Sequence

from autograder import contract
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
        where = (" in " + ", ".join(f"`{n}`" for n in ex.banned_in) + " (and the functions it calls)"
                 if ex.banned_in else "")
        items.append("Not allowed: " + ", ".join(f"`{b}`" for b in ex.banned) + where + ".")
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


# The Python versions the release supports: the check runtime is tested (parsed and
# byte-compiled) for the oldest one, see tests/test_check_platforms.py.
PYTHON_MIN, PYTHON_MAX = (3, 10), (3, 13)
PYTHON_RANGE = f"{PYTHON_MIN[0]}.{PYTHON_MIN[1]} to {PYTHON_MAX[0]}.{PYTHON_MAX[1]}"
# PyTorch stopped publishing macOS x86_64 (Intel) wheels after 2.2: the last one, and the
# NumPy it was built against.
INTEL_MAC_TORCH = "torch==2.2.2"
INTEL_MAC_NUMPY = "numpy<2"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def render_checking(ex: Exercise, has_public_tests: bool) -> str:
    """The "Checking your work" section of an exercise's README."""
    items = [f"Run the notebook `{ex.folder}.ipynb` top to bottom: its cells call your "
             "functions and show what they produce."]
    if has_public_tests:
        items.append(f"Run the public tests: the notebook's last cell, or `python check.py` in this "
                     f"folder, or `pytest` in this folder (all three run the same tests on your saved "
                     f"`{ex.filename}`). They check part of the contract and explain each failure; "
                     "the grader's hidden tests check all of it and decide most of the grade.")
    items.append(f"Submit `{ex.filename}`. The notebook is not graded.")
    return "\n".join(["## Checking your work", "", *_bullets(items), ""])


def render_install() -> str:
    """Per-platform install instructions: CPU-only PyTorch, the supported Python versions."""
    return f"""## Installing (once)

You need Python {PYTHON_RANGE} (`python --version`; on Windows `py --version`) and these
packages. Install PyTorch's **CPU** build: the default Linux and Windows wheels bundle CUDA
and download several GB you do not need. A virtual environment is recommended
(`python -m venv .venv`, then activate it).

**Linux** and **Windows** (in a terminal or PowerShell; on Windows write `py` for `python`):

```bash
python -m pip install torch --index-url {TORCH_CPU_INDEX}
python -m pip install numpy matplotlib jupyter pytest
```

**macOS, Apple Silicon (M1 and later)**: PyPI's macOS wheels have no CUDA, plain pip is right:

```bash
python3 -m pip install torch numpy matplotlib jupyter pytest
```

**macOS, Intel**: PyTorch publishes no Intel-Mac wheels after 2.2, so pin the last one, with
the NumPy it was built for, on Python 3.10 to 3.12:

```bash
python3 -m pip install "{INTEL_MAC_TORCH}" "{INTEL_MAC_NUMPY}" matplotlib jupyter pytest
```

Check it worked: `python -c "import torch, numpy, matplotlib; print(torch.__version__)"`.
"""


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

{render_install()}
## Working on an exercise

```bash
cd {exercises[0].folder if exercises else "<exercise folder>"}
jupyter notebook
```

Open the file you complete and replace every `raise NotImplementedError(...)` with your
code. Re-run the notebook's import cell after each edit: it reloads your file.

## Checking your work

The public tests run on your saved files in three equivalent ways, on Windows, macOS and
Linux, with a time limit on every call into your code:

- **in the notebook**: its last cell (`import check; ok = check.run()`) shows each test's verdict;
- **from any folder of the release**, one command:

  ```bash
  python check.py           # in an exercise folder: that exercise; here: every exercise
  python check.py {" ".join(contract.example_ids())}   # some exercises (`all`: every one), from any folder holding check.py
  python check.py -v        # also shows where the checker and Python are, and the isolation used
  ```

  (`python -m autograder check` in this folder does the same);
- **with pytest**: `pytest` here (every exercise) or in an exercise folder (that one).

Each exercise's report says how many public tests passed and what they are worth in the
real grade (a small part of it). The hidden tests, run when you submit, decide the rest:
passing the public tests is necessary, not sufficient.

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

{render_limits()}"""


def _mb(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):g} MB"


def render_limits() -> str:
    """Every limit a submission can hit when graded, from the constants that enforce them
    (where intake and batch's private copy differ, the tighter one)."""
    from autograder import jobs
    from autograder.budget import DEFAULT_BUDGET_S
    from autograder.intake import reading
    from autograder.sandbox.limits import SandboxConfig

    worker = SandboxConfig()
    items = [
        f"Each graded file (`attention.py` …) at most {_mb(reading.MAX_FILE_BYTES)}; a file submitted "
        f"as a notebook (`attention.ipynb`), at most {_mb(reading.MAX_FILE_BYTES)} of code in its code "
        "cells (saved outputs such as plots do not count).",
        f"The whole submission at most {_mb(min(reading.MAX_TOTAL_BYTES, jobs.STAGE_MAX_BYTES))} "
        f"(unzipped), {min(reading.MAX_ENTRIES, jobs.STAGE_MAX_ENTRIES):,} files and folders, folders "
        f"nested at most {min(reading.MAX_DEPTH, jobs.STAGE_MAX_DEPTH)} deep; links are never followed.",
        f"Importing your file: {worker.load_timeout:g} s (a notebook's code cells all run when it is "
        "imported: keep long demos out of it; a cell that raises ends there and the other cells "
        "still run, as nbgrader runs a notebook). Each call into your code: "
        f"{worker.call_timeout:g} s. All the tests of one exercise together: {DEFAULT_BUDGET_S:g} s.",
        f"Memory: {worker.memory_mb:,} MB for your code (beyond what Python and its libraries take).",
        f"Printed output: the first {worker.output_limit // 1024} KB are kept. Files your code writes: "
        f"at most {worker.file_size_mb} MB each; the scratch folder (`/tmp`) may hold as little as "
        f"{worker.private_tmp_mb} MB; "
        f"at most {worker.max_processes} processes and threads; no network.",
    ]
    return "\n".join(["## Limits when graded", "", *_bullets(items), ""])
