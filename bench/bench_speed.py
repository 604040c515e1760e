"""The grading speed table, for one or more kits side by side (this checkout, an older one).

    .venv/bin/python bench/bench_speed.py [--runs 5] [--kit PATH ...] [--skip otter,batch]

For each kit (a folder holding ``autograder/`` and ``reference/``: this checkout by default,
or a ``git worktree`` of an older commit, run with this same venv's Python), interleaved run
by run so a busy machine slows every kit alike, it measures (medians of ``--runs``):

* ``grade`` of one correct ex1 (the model solution) through the CLI, wall time of the whole
  process, against ``otter run`` of the kit's own otter export of ex1 on the same file (built
  once, from this checkout: otter's time hardly depends on the kit's version), and the ratio;
* ``grade solutions`` (every default exercise), wall time, and its ``execution_time``;
* the peak PSS of a second ``grade solutions``: the grader, its zygote and its workers summed,
  sampled every 20 ms (PSS shares the pages forked processes have in common, as a memory
  cgroup charges). A run of its own: reading every process's ``smaps_rollup`` 50 times a
  second walks their page tables and slows the grade it measures (by 1–2 s here), so the
  timed run is not sampled;
* ``batch --jobs 2`` of 12 submissions (the solutions, a stub, mutants) against 12 separate
  ``grade`` runs of the same folders, one after the other, and the ratio.

It prints the table and, with ``--json FILE``, writes every run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_grading import descendants, pss_kb  # noqa: E402


def _env(kit: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH"))}
    env.update(PYTHONPATH=str(kit), MPLBACKEND="Agg")
    return env


def _timed(cmd: list[str], cwd: Path, env: dict[str, str], sample_pss: bool = False) -> tuple[float, float]:
    """(wall seconds, peak PSS in MB of the process and its descendants; 0 unless sampled)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        if sample_pss:
            peak = max(peak, sum(pss_kb(p) for p in descendants(proc.pid)))
        time.sleep(0.02)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} … exited with {proc.returncode}")
    return time.perf_counter() - start, peak / 1024


def grade_once(kit: Path, submission: Path, exercises: str | None, work: Path, pss: bool = False) -> dict:
    results = work / "results.json"
    cmd = [sys.executable, "-m", "autograder", "grade", str(submission), "--results", str(results)]
    cmd += ["--exercises", exercises] if exercises else []
    wall, peak = _timed(cmd, work, _env(kit), pss)
    data = json.loads(results.read_text())
    return {"wall": wall, "exec": data["execution_time"], "peak_mb": peak, "score": data["score"]}


def otter_once(export: Path, submission: Path, work: Path) -> float:
    otter = shutil.which("otter", path=str(Path(sys.executable).parent)) or "otter"
    out = work / "otter-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    wall, _ = _timed([otter, "run", "-a", str(export), "-o", str(out), str(submission)], work, _env(ROOT))
    return wall


def build_otter_export(work: Path) -> Path:
    out = work / "dist"
    subprocess.run([sys.executable, "-m", "autograder", "build", "--only", "otter", "--exercises", "ex1",
                    "--out", str(out)], cwd=ROOT, env=_env(ROOT), check=True, capture_output=True, timeout=900)
    return out / "otter" / "ex1_attention" / "autograder.zip"


def make_class(dest: Path) -> list[Path]:
    """12 submissions: 8 model solutions, 2 stubs, 2 with one exercise a known mistake."""
    sys.path.insert(0, str(ROOT / "tests"))
    from mutants import as_submitted, mutant_source
    from autograder import contract
    folders = []
    mutants = [sorted((ROOT / "tests" / "submissions" / ex / "mutants").glob("*.diff"))[0] for ex in ("ex1", "ex3")]
    for i in range(12):
        folder = dest / f"s{i:02d}"
        folder.mkdir(parents=True)
        for ex in contract.DEFAULT:
            solution = as_submitted((ROOT / "solutions" / ex.folder / ex.filename).read_text())
            if i in (8, 9):
                source = (ROOT / "assignments" / ex.folder / ex.filename).read_text()
            elif i in (10, 11) and ex.id == ("ex1" if i == 10 else "ex3"):
                source = mutant_source(mutants[i - 10])
            else:
                source = solution
            (folder / ex.filename).write_text(source)
        folders.append(folder)
    return folders


def batch_once(kit: Path, subs: Path, work: Path) -> float:
    out = work / "batch-out"
    shutil.rmtree(out, ignore_errors=True)
    wall, _ = _timed([sys.executable, "-m", "autograder", "batch", str(subs), "--jobs", "2", "--no-progress",
                      "--out", str(out / "grades.csv")], work, _env(kit))
    return wall


def separate_once(kit: Path, folders: list[Path], work: Path) -> float:
    start = time.perf_counter()
    for folder in folders:
        grade_once(kit, folder, None, work)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kit", action="append", default=None, help="a kit folder (repeatable; default: this checkout)")
    parser.add_argument("--skip", default="", help="comma list of otter, batch")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    kits = [Path(k).resolve() for k in (args.kit or [str(ROOT)])]
    skip = set(filter(None, args.skip.split(",")))
    work = Path(tempfile.mkdtemp(prefix="bench-speed-"))
    ex1 = work / "ex1"
    ex1.mkdir()
    shutil.copy(ROOT / "solutions" / "ex1_attention" / "attention.py", ex1 / "attention.py")
    export = None if "otter" in skip else build_otter_export(work)
    subs = work / "class"
    folders = make_class(subs)
    rows: dict[str, dict[str, list[float]]] = {str(k): {} for k in kits}
    otter: list[float] = []
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    for run in range(args.runs):
        if export is not None:
            otter.append(otter_once(export, ex1 / "attention.py", work))
        for kit in kits:
            row = rows[str(kit)]
            one = grade_once(kit, ex1, "ex1", work)
            row.setdefault("ex1_wall", []).append(one["wall"])
            full = grade_once(kit, ROOT / "solutions", None, work)
            row.setdefault("full_wall", []).append(full["wall"])
            row.setdefault("full_exec", []).append(full["exec"])
            sampled = grade_once(kit, ROOT / "solutions", None, work, pss=True)
            row.setdefault("peak_mb", []).append(sampled["peak_mb"])
            row.setdefault("sampled_wall", []).append(sampled["wall"])
            if "batch" not in skip:
                row.setdefault("batch_wall", []).append(batch_once(kit, subs, work))
                row.setdefault("separate_wall", []).append(separate_once(kit, folders, work))
        print(f"run {run + 1}/{args.runs} done (load {os.getloadavg()[0]:.2f})", flush=True)
    med = statistics.median
    otter_med = med(otter) if otter else float("nan")
    print(f"\notter run of ex1: {otter_med:.2f} s (median of {len(otter)})")
    for kit in kits:
        row = rows[str(kit)]
        print(f"\nkit {kit}:")
        print(f"  grade ex1: {med(row['ex1_wall']):.2f} s  = {med(row['ex1_wall']) / otter_med:.2f} of otter's time")
        print(f"  grade solutions: {med(row['full_wall']):.2f} s wall, {med(row['full_exec']):.2f} s execution_time")
        print(f"  peak PSS of grade solutions: {med(row['peak_mb']):.0f} MB "
              f"(that run, sampled: {med(row['sampled_wall']):.2f} s wall)")
        if "batch_wall" in row:
            print(f"  batch --jobs 2 of 12: {med(row['batch_wall']):.1f} s; 12 separate grades: "
                  f"{med(row['separate_wall']):.1f} s; ratio {med(row['separate_wall']) / med(row['batch_wall']):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"otter": otter, "kits": rows}, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
