"""A TA without root: ``batch`` of a class run as an ordinary user, with and without the
process-level protection (Landlock and the seccomp filter: the ``landlock`` level; with
``AUTOGRADER_LANDLOCK=0`` the grader runs at the ``process`` level, the filter only).

    sudo .venv/bin/python bench/bench_ta_batch.py [--count 10] [--repeat 3] [--user ag-bench-ta]
                                                 [--python /path/outside/root/bin/python]

Run as root: it makes the ordinary user if missing, builds ``--count`` submissions as
``bench/bench_batch.py`` does (solutions, a stub, mutants, a slow one, hostile ones), gives the
class and a copy of the kit to that user, then times
``python -m autograder batch CLASS --out OUT/grades.csv --jobs 2`` as that user, alternating
the two settings run by run, and prints the medians and the ratio. The
Python must be readable by that user (not under /root): by default the one the kit's tests
make (``tests/outside_python.py``).
"""
from __future__ import annotations

import argparse
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from autograder import contract  # noqa: E402

SETTINGS = {"landlock (default)": "1", "process (AUTOGRADER_LANDLOCK=0)": "0"}


def ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/usr/sbin/nologin", name], check=True)
        return pwd.getpwnam(name)


def run_as(user: pwd.struct_passwd, argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups",
                           "--", *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    said = done.stdout + done.stderr
    if done.returncode not in (0, 1) or " graded" not in said:
        raise SystemExit(f"batch failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    level = next((line for line in said.splitlines() if " level" in line), "?")   # what batch says of it
    return seconds, level.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--user", default="ag-bench-ta")
    parser.add_argument("--python", default=None)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: it makes the ordinary user and hands it the class")
    python = args.python
    if python is None:
        from outside_python import outside_python
        python = str(outside_python())
    # batch's own dependencies (a TA's `pip install` brings them; the tests' Python has the grader's only)
    subprocess.run([python, "-m", "pip", "install", "-q", "tqdm>=4.66", "jinja2>=3.1"], check=True)
    user = ensure_user(args.user)
    import bench_batch
    # Without Landlock (the process level) a submission may signal every process of the TA's
    # user: kill_the_grader's kill(-1, SIGKILL) ends the whole batch there (Landlock's signal
    # scoping stops it at the landlock level). This bench times the two levels, so its class
    # leaves that one out; tests/test_sandbox_round4.py holds what each level protects.
    hostile = tuple(h for h in bench_batch.HOSTILE if h != "kill_the_grader")
    work = Path(tempfile.mkdtemp(prefix="ag-ta-bench-", dir="/var/tmp"))
    try:
        (work / "class").mkdir()
        counts = bench_batch.build(work / "class", args.count, contract.DEFAULT, hostile)
        kit = work / "kit"                                  # the TA's own copy, as a TA would clone it
        for top in ("autograder", "reference"):
            shutil.copytree(ROOT / top, kit / top, ignore=shutil.ignore_patterns("__pycache__"))
        print(f"class of {args.count}: {counts}")
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(work)], check=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": user.pw_dir, "LANG": "C.UTF-8", "PYTHONPATH": str(kit),
               "MPLBACKEND": "Agg"}

        def batch(out: Path) -> list[str]:
            return [python, "-m", "autograder", "batch", str(work / "class"), "--out", str(out / "grades.csv"),
                    "--jobs", str(args.jobs)]

        run_as(user, batch(work / "warm-up"), env, work)     # untimed: byte code and caches written once
        times: dict[str, list[float]] = {name: [] for name in SETTINGS}
        for run in range(args.repeat):
            for name, value in SETTINGS.items():
                seconds, level = run_as(user, batch(work / f"out-{run}-{value}"),
                                        {**env, "AUTOGRADER_LANDLOCK": value}, work)
                times[name].append(seconds)
                print(f"run {run + 1} {name}: {seconds:.1f} s  [{level[:90]}]", flush=True)
        medians = {name: statistics.median(t) for name, t in times.items()}
        print(f"\nbatch of {args.count}, --jobs {args.jobs}, as {args.user} (median of {args.repeat}):")
        for name, value in medians.items():
            print(f"  {name:34s} {value:7.1f} s")
        first, second = medians.values()
        print(f"  ratio landlock / process: {first / second:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
