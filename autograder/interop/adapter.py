"""The kit's suites for ONE exercise, run in-process inside another tool's kernel.

nbgrader's test cells and otter's test cases do not contain tests: they name a kit test
(its pytest node id) or a group of them (a suite file), and this module runs the kit's own
hidden and public suites on the student's source and reports per-test outcomes.

* :func:`collect_tests` - pytest collection only: node id, title, weight, points scaled to
  ``Exercise.points`` (exactly as :func:`autograder.grading.scale_to_totals` does), visibility.
  Exporters use it, so exports regenerate from whatever the suites contain.
* :func:`run_exercise` - an in-process backend (``open_sandbox(…, in_process=True)``) and :func:`autograder.grading.run`,
  the native grader's engine call minus the worker process. Memoised per
  (exercise, source), so a notebook's ten test cells cost one run.
* :func:`kernel_source` - the student's source as the tool's kernel sees it.

There is NO isolation here: student code runs in the calling interpreter (the tool's
kernel), next to the tests. That is what nbgrader and otter do anyway; the native grader
(``python -m autograder grade`` / the Gradescope zip) is the path that resists cheating.
"""
from __future__ import annotations

import contextlib
import functools
import io
import json
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autograder import contract, grading, intake
from autograder import results as kit_results
from autograder.grading import SUITES_DIR, open_sandbox

# Every generated test cell / test file contains this string; history-based source
# recovery skips cells that contain it.
INTEROP_MARK = "autograder.interop"


@dataclass(frozen=True)
class TestInfo:
    nodeid: str          # "ex1_attention/test_forward_np.py::test_np_unbatched_values"
    exercise: str        # "ex1"
    title: str
    points: float        # scaled to Exercise.points
    public: bool

    @property
    def file(self) -> str:          # "test_forward_np.py" or "public/test_public.py"
        path = PurePosixPath(self.nodeid.split("::", 1)[0])
        return str(PurePosixPath(*path.parts[1:]))

    @property
    def group(self) -> str:
        """Tests are grouped by suite file (and by visibility, should a file mix both)."""
        if self.public == self.file.startswith("public/"):
            return self.file
        return self.file + ("#public" if self.public else "#hidden")

    @property
    def name(self) -> str:
        return f"{self.exercise} · {self.title}"


@dataclass
class Outcome:
    nodeid: str
    name: str
    passed: bool
    score: float
    max_score: float
    output: str
    public: bool


# ----------------------------------------------------------------------------- pytest

_NO_FAULTHANDLER = ("-p", "no:faulthandler")     # a notebook kernel's stderr is not a real file


@functools.lru_cache(maxsize=None)
def collect_tests(exercise_id: str) -> list[TestInfo]:
    """The exercise's hidden + public tests, in the native grader's order (collection only)."""
    ex = contract.BY_ID[exercise_id]
    if not (SUITES_DIR / ex.folder).is_dir():
        return []
    with contextlib.redirect_stdout(io.StringIO()):
        collected = grading.collect((ex,), _NO_FAULTHANDLER)
    return [TestInfo(r.nodeid, r.exercise, r.title, r.points, r.public) for r in collected]


def groups(exercise_id: str) -> dict[str, list[TestInfo]]:
    """Group name -> tests, in suite order (public groups first, as collected)."""
    out: dict[str, list[TestInfo]] = {}
    for t in collect_tests(exercise_id):
        out.setdefault(t.group, []).append(t)
    return out


def group_points(tests: list[TestInfo]) -> float:
    return round(sum(t.points for t in tests), 4)


# ----------------------------------------------------------------------------- running

@dataclass(frozen=True)
class ExerciseRun:
    """One engine run of an exercise's suites on one source: per-test outcomes and the
    exercise's structured outcome."""
    tests: dict[str, Outcome]                    # node id -> outcome, in suite order
    fate: kit_results.ExerciseOutcome


def exercise_outcome(exercise_id: str, source: str | None, origin: str = "") -> kit_results.ExerciseOutcome:
    """What became of the exercise (graded, missing, syntax_error, import_error, …) on
    ``source``: the engine's structured outcome from the same run as :func:`run_exercise`."""
    return _run(exercise_id, source, origin).fate


def run_exercise(exercise_id: str, source: str | None, origin: str = "") -> dict[str, Outcome]:
    """Node id -> outcome for every test of the exercise, on ``source`` (None: missing file).

    Student code is exec'd in THIS process (an in-process backend (``open_sandbox(…, in_process=True)``)). Its output and
    warnings are swallowed so that a tool that scores stderr (nbgrader) is not misled.
    """
    return _run(exercise_id, source, origin).tests


@functools.lru_cache(maxsize=8)      # a notebook's test cells ask one after another: one run
def _run(exercise_id: str, source: str | None, origin: str) -> ExerciseRun:
    """:func:`autograder.grading.run`, the native grader's engine call, in process."""
    from autograder.budget import Budgets
    from autograder.sandbox import SandboxConfig

    ex = contract.BY_ID[exercise_id]
    found = intake.Found(ex, source=source, origin=origin or ex.filename)
    if source is None:
        found.problem = f"{ex.filename} was not found"
    else:
        found.banned = intake.find_banned(source, ex)
    submission = intake.Submission({ex.id: found})
    budgets = Budgets(default=float("inf"))      # no budgets in a notebook kernel (as before)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # inside: the sandbox reports its isolation level on stderr, which nbgrader would score
        sandbox = open_sandbox(submission, SandboxConfig(), in_process=True)
        try:
            ran = grading.run(sandbox, submission, (ex,), budgets, pytest_extra=_NO_FAULTHANDLER)
        except RuntimeError as exc:
            raise RuntimeError(f"the {exercise_id} suites could not run: {exc}\n{sink.getvalue()[-4000:]}") from None
    tests = {nodeid: Outcome(nodeid, r.name, r.passed, r.score, r.max_score, r.output, r.visibility == "visible")
             for nodeid, r in zip(ran.plugin.order, ran.tests)}
    return ExerciseRun(tests, ran.outcomes[0])


# ----------------------------------------------------------------------------- the student's source

def kernel_source(exercise_id: str, folder: str | Path | None = None) -> tuple[str | None, str]:
    """(source, origin) of the student's file as the tool's kernel sees it.

    1. The submission file in the kernel's working folder (nbgrader autogrades with the
       notebook's folder as cwd; otter runs from the submission folder): ``<module>.py`` or
       ``<module>.ipynb`` through the native intake (same cell selection and magic removal),
       else the folder's only ``.py`` (otter accepts any single ``.py``).
    2. Otherwise the cells the kernel has executed (IPython's raw input history), minus the
       kit's own test cells.
    """
    ex = contract.BY_ID[exercise_id]
    cwd = Path(folder) if folder is not None else Path.cwd()
    for name in (ex.filename, ex.notebook):
        if (cwd / name).is_file():
            found = intake.collect(cwd / name, (ex,)).found[ex.id]
            return found.source, found.origin
    scripts = sorted(p for p in cwd.glob("*.py") if p.is_file() and not p.name.startswith("__"))
    if len(scripts) == 1:
        return scripts[0].read_text(encoding="utf-8", errors="replace"), scripts[0].name
    return history_source(), "the notebook's executed cells"


def history_source() -> str | None:
    """The raw text of the cells executed so far in this IPython kernel, kit cells excluded."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    cells = [c for c in shell.history_manager.input_hist_raw[1:] if c.strip() and INTEROP_MARK not in c]
    if not cells:
        return None
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}} for c in cells]}
    source, _ = intake.notebook_to_source(json.dumps(nb))
    return source
