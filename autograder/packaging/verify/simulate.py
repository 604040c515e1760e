"""Prove a built ``autograder.zip`` by running it the way Gradescope does.

:func:`simulate_gradescope` replays Gradescope as root, in a private mount namespace: a
fresh tmpfs on ``/autograder``, the zip unpacked into ``source/``, ``run_autograder`` copied
beside it, a submission, then ``cd /autograder && ./run_autograder`` with the current
environment's Python (instead of re-running ``setup.sh``). The repository's own kit can be
covered by empty mounts meanwhile, so only the zip's copy can run. Without root,
:func:`grade_directly` runs ``grade`` from the unpacked zip instead.
:func:`self_grade` (``build --self-grade``, the README's main command) grades the solutions
and the stubs with it and prints a score table.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from autograder import contract, results
from autograder.packaging.zips import BUILD_INFO, BuildError, unpack

GRADESCOPE_ROOT = Path("/autograder")


def can_simulate() -> tuple[bool, str]:
    """Whether :func:`simulate_gradescope` can run here, and if not, why."""
    if os.geteuid() != 0:
        return False, "not root (a private mount namespace with a tmpfs on /autograder needs root)"
    if shutil.which("unshare") is None:
        return False, "the `unshare` command is not available"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return False, f"`unshare --mount` fails here: {probe.stderr.strip()[:200]}"
    return True, ""


_SIMULATION = r"""
set -euo pipefail
work="$1"; python="$2"; shift 2
mount -t tmpfs -o mode=0755,size=1g tmpfs /autograder
mkdir /autograder/source /autograder/submission /autograder/results
cp -a "$work/source/." /autograder/source/
cp /autograder/source/run_autograder /autograder/run_autograder
chmod 0755 /autograder/run_autograder
cp -a "$work/submission/." /autograder/submission/
for folder in "$@"; do                  # e.g. the repository's own kit: only the zip's may run
    mount -t tmpfs -o ro,nosuid,nodev,size=4k,mode=0555 tmpfs "$folder"
done
cd /autograder
set +e
env -u PYTHONPATH AUTOGRADER_PYTHON="$python" ./run_autograder > "$work/out/stdout" 2>&1
echo $? > "$work/out/status"
cp -a /autograder/results/. "$work/out/results/"
"""


@dataclass
class SimulatedRun:
    results: dict | None          # results.json as Gradescope would read it (None: missing/unreadable)
    stdout: str                   # everything run_autograder printed
    status: int                   # run_autograder's exit status
    kit_path: str | None          # the `autograder` package that ran, as run_autograder reports it
    build_id: str | None          # that package's BUILD_INFO build id

    def by_exercise(self) -> dict[str, tuple[float, float]]:
        return results.totals_by_exercise((self.results or {}).get("tests", []))


def _read_run(out: Path, status: int) -> SimulatedRun:
    stdout = (out / "stdout").read_text(errors="replace") if (out / "stdout").exists() else ""
    try:
        data = json.loads((out / "results" / "results.json").read_text())
    except (OSError, ValueError):
        data = None
    match = re.search(r"^kit: (\S+) \| build: (\S+)", stdout, re.M)
    return SimulatedRun(results=data, stdout=stdout, status=status,
                        kit_path=match[1] if match else None, build_id=match[2] if match else None)


def simulate_gradescope(zip_path: Path, submission: Path, python: str | None = None,
                        hide: Iterable[Path] = (), timeout: float = 600,
                        env: dict[str, str] | None = None) -> SimulatedRun:
    """Run ``zip_path`` on ``submission`` as Gradescope would (root only; see the module doc).

    ``hide``: folders covered by empty read-only mounts during the run (e.g. the repository's
    ``autograder/`` and ``reference/``, so that only the zip's copy of the kit can be imported).
    ``env``: extra environment for ``run_autograder`` (e.g. ``AUTOGRADER_TIME_LIMIT``).
    """
    ok, why = can_simulate()
    if not ok:
        raise BuildError(f"cannot simulate Gradescope: {why}")
    GRADESCOPE_ROOT.mkdir(exist_ok=True)          # the mount point (left empty on the host)
    with tempfile.TemporaryDirectory(prefix="gradescope-sim-") as tmp:
        work = Path(tmp)
        unpack(zip_path, work / "source")
        shutil.copytree(submission, work / "submission") if submission.is_dir() else \
            (work / "submission").mkdir() or shutil.copy(submission, work / "submission")
        (work / "out" / "results").mkdir(parents=True)
        cmd = ["unshare", "--mount", "--propagation", "private", "bash", "-c", _SIMULATION, "sim",
               str(work), python or sys.executable, *[str(h) for h in hide if Path(h).is_dir()]]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
        if proc.returncode != 0:
            raise BuildError(f"the simulated Gradescope run failed to set up: {proc.stderr.strip()[-2000:]}")
        status = int((work / "out" / "status").read_text().strip() or 1)
        return _read_run(work / "out", status)


def grade_directly(zip_path: Path, submission: Path, python: str | None = None,
                   exercises: str | None = None, timeout: float = 600) -> SimulatedRun:
    """Without root: ``python -m autograder grade`` from the unpacked zip (no /autograder)."""
    with tempfile.TemporaryDirectory(prefix="gradescope-direct-") as tmp:
        work = Path(tmp)
        unpack(zip_path, work / "source")
        info = json.loads((work / "source" / "autograder" / BUILD_INFO).read_text())
        (work / "out" / "results").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONDONTWRITEBYTECODE": "1"}
        probe = ("import autograder, json, pathlib; p = pathlib.Path(autograder.__file__).parent; "
                 "print('kit:', p, '| build:', json.loads((p / 'BUILD_INFO.json').read_text())['build_id'])")
        py = python or sys.executable
        first = subprocess.run([py, "-c", probe], cwd=work / "source", env=env, capture_output=True,
                               text=True, timeout=60)
        proc = subprocess.run([py, "-m", "autograder", "grade", str(submission), "--results",
                               str(work / "out" / "results" / "results.json"), "--exercises",
                               exercises or ",".join(info["exercises"])],
                              cwd=work / "source", env=env, capture_output=True, text=True, timeout=timeout)
        (work / "out" / "stdout").write_text(first.stdout + proc.stdout + proc.stderr)
        return _read_run(work / "out", proc.returncode)


# --------------------------------------------------------------------------- self-grade


def _submission(kind: str, root: Path, exercises: Iterable[contract.Exercise], target: Path) -> Path:
    """``solutions``: the model answers; ``stubs``: the released files from assignments/."""
    source = root / ("solutions" if kind == "solutions" else "assignments")
    target.mkdir(parents=True)
    for ex in exercises:
        path = source / ex.folder / ex.filename
        if not path.is_file():
            raise BuildError(f"{path} not found (needed for the {kind} self-grade)")
        shutil.copy(path, target / ex.filename)
    return target


def self_grade(root: Path, zip_path: Path, python: str | None = None,
               say=print) -> int:
    """Grade the solutions and the stubs with ``zip_path`` the way Gradescope would; print a table.

    Returns 0 when the solutions get full marks and the stubs zero, 1 otherwise.
    """
    with zipfile.ZipFile(zip_path) as archive:
        info = json.loads(archive.read(f"autograder/{BUILD_INFO}"))
    exercises = contract.select(info["exercises"])
    simulated, why = can_simulate()
    if simulated:
        say(f"self-grade: {zip_path} in a simulated Gradescope run (root, private mount namespace, "
            "tmpfs on /autograder, ./run_autograder, this repository's kit hidden)")
    else:
        say(f"self-grade: {why}; falling back to `python -m autograder grade` from the unpacked zip "
            "(no /autograder layout, no worker-user isolation)")
    hide = [root / "autograder", root / "reference"]
    runs: dict[str, SimulatedRun] = {}
    with tempfile.TemporaryDirectory(prefix="self-grade-") as tmp:
        for kind in ("solutions", "stubs"):     # one after the other, as Gradescope would
            sub = _submission(kind, root, exercises, Path(tmp) / kind)
            runs[kind] = (simulate_gradescope(zip_path, sub, python, hide=hide) if simulated
                          else grade_directly(zip_path, sub, python))

    problems: list[str] = []
    for kind, run in runs.items():
        if run.results is None:
            problems.append(f"{kind}: no readable results.json\n{run.stdout[-3000:]}")
            continue
        try:
            results.validate(run.results)
        except Exception as exc:          # noqa: BLE001 - report, do not crash the table
            problems.append(f"{kind}: results.json is not valid: {str(exc)[:300]}")
        if run.build_id != info["build_id"]:
            problems.append(f"{kind}: the kit that ran ({run.kit_path}, build {run.build_id}) "
                            f"is not the zip's (build {info['build_id']})")
    width = max(len(f"{ex.id} {ex.title}") for ex in exercises)
    say(f"  {'exercise':<{width}}  {'solutions':>12}  {'stubs':>12}")
    sums = {kind: [0.0, 0.0] for kind in runs}
    for ex in exercises:
        cells = []
        for kind, run in runs.items():
            score, max_score = run.by_exercise().get(ex.id, (0.0, 0.0))
            sums[kind][0] += score
            sums[kind][1] += max_score
            cells.append(f"{score:g}/{max_score:g}")
            expected_max = info["points"][ex.id]
            if abs(max_score - expected_max) > 1e-6:
                problems.append(f"{kind} {ex.id}: max score {max_score:g}, configured {expected_max:g}")
            if kind == "solutions" and score < max_score - 1e-6:
                failed = [t["name"] + ": " + t.get("output", "").splitlines()[0][:140]
                          for t in run.results["tests"]
                          if ex.id in t.get("tags", []) and t["status"] != "passed" and t.get("output")]
                problems.append(f"solutions lose points in {ex.id}:\n      " + "\n      ".join(failed))
            if kind == "stubs" and score > 1e-6:
                problems.append(f"the stubs score {score:g} in {ex.id}")
        say(f"  {ex.id + ' ' + ex.title:<{width}}  {cells[0]:>12}  {cells[1]:>12}")
    tot = [f"{s:g}/{m:g}" for s, m in sums.values()]
    say(f"  {'total':<{width}}  {tot[0]:>12}  {tot[1]:>12}")
    say(f"  kit that ran: {runs['solutions'].kit_path} (build {runs['solutions'].build_id}; "
        f"zip build {info['build_id']})")
    for problem in problems:
        say(f"  PROBLEM: {problem}")
    return 1 if problems else 0
