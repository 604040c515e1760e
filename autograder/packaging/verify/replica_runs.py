"""Grade submissions in the Gradescope replica, each in a fresh container, and judge the scores.

Every run mirrors Gradescope: a fresh container of the replica's image (see
:mod:`autograder.packaging.verify.replica`) with ``--network none --cpus 0.5 --memory 768m
--memory-swap 768m``; the submission copied into ``/autograder/submission``, a
``/autograder/submission_metadata.json``, ``run_autograder`` copied to ``/autograder/`` and
run from there as root; ``/autograder/results/results.json`` read back. Each submission runs
with Docker's **default** privileges (what Gradescope is assumed to give) and again with
``SYS_ADMIN`` and no seccomp/AppArmor profile (a platform that allows namespaces).

The submissions (:func:`cases`), and what each must score:

* ``solutions`` (``solutions/``): full marks;
* ``stubs`` (``assignments/``): zero;
* ``mutant``: the solutions with one bug (a patch from ``tests/submissions/<ex>/mutants/``,
  or without that corpus the first exercise's stub): more than zero, less than full marks;
* ``symlinks``: every file a symlink to the kit's own ``/autograder/source/reference/``: zero;
* ``reader``: stubs, but the first file executes the kit's reference copy read from
  ``/autograder/source`` at import: zero.
* ``round3``: the solutions beside the round-3 attacks that cost honest work before:
  the first file, at import, tries to pin two 320 MiB System V shared-memory segments (1.25 GiB
  stayed pinned once and OOM-killed the grader in 768 MB) and to open every socket family but
  AF_UNIX (netlink and vsock included; INET ones that reach the loopback), and raises if any
  of that worked; ex3's ValueError
  message carries lone surrogates, control and bidi characters across the wire. Full marks:
  a defence that fails shows as a lost exercise, an OOM kill or a missing results.json.
* ``round4``: the solutions; the first file, at import, writes a note into every folder its
  user may write; the second raises if it finds one (a worker's files outliving its exercise)
  or if it can start a program. Full marks: every place was private, confined or swept.

Peak memory is the container's cgroup high-water mark (``memory.max_usage_in_bytes`` on
cgroup v1, ``memory.peak`` on v2), read inside the container after ``run_autograder``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from autograder.jsontypes import JSONObject
from autograder import contract
from autograder.packaging.verify import replica
from autograder.packaging.verify.replica import ReplicaError, build_image, docker, docker_available
from autograder.packaging.zips import BUILD_INFO

LIMITS = ("--network", "none", "--cpus", "0.5", "--memory", "768m", "--memory-swap", "768m")
PRIVILEGES = {
    "default": (),
    "sys_admin": ("--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined",
                  "--security-opt", "apparmor=unconfined"),
}
EXPECTED_LEVEL = {"default": "user", "sys_admin": "namespaces"}   # the strongest each allows
CASES = ("solutions", "stubs", "mutant", "symlinks", "reader", "round3", "round4")
PREFERRED_MUTANT = "np_no_sqrt_scaling"
RUN_TIMEOUT_S = 900
MARK = "replica-measure:"

_RUN_SCRIPT = r"""
cp /autograder/source/run_autograder /autograder/run_autograder && chmod 0755 /autograder/run_autograder
cd /autograder
start=$(date +%s.%N)
./run_autograder
end=$(date +%s.%N)
peak=$(cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.peak 2>/dev/null || echo -1)
echo "replica-measure: $start $end $peak"
"""

_READER = '''"""A hostile stub: runs the grader's own reference, read from the kit's files."""
from pathlib import Path

_kit = Path("/autograder/source/reference/{filename}")
exec(compile(_kit.read_text(), "reference", "exec"))   # the grade must not come from here
'''

# Appended to the first exercise's solution: attacks whose success must cost that exercise.
_ROUND3_ATTACKS = r'''

# --- replica round3: attacks beside honest work (the grade must stay full) ---
import ctypes as _r3_ctypes
import socket as _r3_socket


def _r3_pinned_segments(mib=320, count=2):
    """System V segments created, touched and detached: pinned memory no limit of the worker sees."""
    libc = _r3_ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [_r3_ctypes.c_int, _r3_ctypes.c_size_t, _r3_ctypes.c_int]
    libc.shmat.argtypes = [_r3_ctypes.c_int, _r3_ctypes.c_void_p, _r3_ctypes.c_int]
    libc.shmat.restype = _r3_ctypes.c_void_p
    libc.shmdt.argtypes = [_r3_ctypes.c_void_p]
    made = 0
    for _ in range(count):
        segment = libc.shmget(0, mib << 20, 0o1600)            # IPC_PRIVATE, IPC_CREAT | 0600
        if segment < 0:
            continue
        address = libc.shmat(segment, None, 0)
        if address is None or address == 2 ** 64 - 1:         # (void *) -1
            continue
        _r3_ctypes.memset(address, 1, mib << 20)
        libc.shmdt(address)
        made += 1
    return made


def _r3_open_families():
    """Families that let a socket out: INET ones that reach the loopback (a private network
    namespace's loopback is down: opening them there reaches nothing), and any other family
    but AF_UNIX that opens at all."""
    opened = []
    for name, family, kind, loopback in (("AF_INET", 2, 2, ("127.0.0.1", 9)), ("AF_INET6", 10, 2, ("::1", 9)),
                                         ("AF_NETLINK", 16, 3, None), ("AF_PACKET", 17, 2, None),
                                         ("AF_VSOCK", 40, 1, None)):
        try:
            with _r3_socket.socket(family, kind) as sock:
                if loopback is not None:
                    sock.connect(loopback)
            opened.append(name)
        except OSError:
            pass
    return opened


_r3_let_through = (_r3_open_families(), _r3_pinned_segments())
if _r3_let_through[0] or _r3_let_through[1]:
    raise RuntimeError(f"round 3 defences let through: sockets {_r3_let_through[0]}, "
                       f"{_r3_let_through[1]} shared-memory segments of 320 MiB")
'''
_ODD_TEXT = "\\udcff\\udc80\\x01\\x1b[2J\\u202e"      # as source text: lone surrogates, controls, bidi


@dataclass
class Case:
    name: str
    folder: Path
    expect: str               # "full", "zero" or "partial"
    what: str


@dataclass
class Run:
    case: Case
    privileges: str
    score: float | None = None
    max_score: float | None = None
    level: str = "?"
    wall_s: float | None = None
    peak_bytes: int | None = None
    problems: list[str] | None = None
    log: str = ""


# --------------------------------------------------------------------------- submissions


def _load_mutants(root: Path):
    path = root / "tests" / "mutants.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_replica_mutants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mutant(root: Path, exercises: tuple[contract.Exercise, ...], target: Path) -> str:
    """Write the solutions with one bug into ``target``; returns what the bug is."""
    _copy_files(root / "solutions", exercises, target)
    mutants = _load_mutants(root)
    for ex in exercises:
        folder = root / "tests" / "submissions" / ex.id / "mutants"
        patches = sorted(folder.glob("*.diff")) if mutants and folder.is_dir() else []
        patches.sort(key=lambda p: p.stem != PREFERRED_MUTANT)
        if patches:
            base = mutants.as_submitted((root / "solutions" / ex.folder / ex.filename).read_text())
            (target / ex.filename).write_text(mutants.apply_patch(base, patches[0].read_text()))
            return f"solutions with {ex.id} mutant {patches[0].stem}"
    first = exercises[0]
    shutil.copy(root / "assignments" / first.folder / first.filename, target / first.filename)
    return f"solutions with {first.id} left as the stub"


def _round3(root: Path, exercises: tuple[contract.Exercise, ...], target: Path) -> str:
    """Write the solutions with the round-3 attacks into ``target``; returns what they are."""
    _copy_files(root / "solutions", exercises, target)
    first = target / exercises[0].filename
    first.write_text(first.read_text() + _ROUND3_ATTACKS)
    odd = ""
    for ex in exercises:
        path = target / ex.filename
        text = path.read_text()
        if not odd and 'raise ValueError(f"' in text:       # the first exercise that raises one
            path.write_text(text.replace('raise ValueError(f"', f'raise ValueError(f"{_ODD_TEXT * 40}', 1))
            odd = f"; {ex.id}'s ValueError message of lone surrogates, controls and bidi characters"
    return f"solutions; {exercises[0].filename} pins SysV memory and opens sockets at import{odd}"


# Round 4: the first exercise's file writes a note into every folder its user may write; a
# later exercise's file raises if it finds one (a worker that outlives its exercise); and one
# more raises if the worker can start a program. Full marks only if every defence holds.
_ROUND4_PLANT = r'''

# --- replica round4: leave a note wherever this user may write ---
import os as _r4_os
for _r4_folder, _r4_dirs, _r4_files in _r4_os.walk("/", topdown=True):
    _r4_dirs[:] = [d for d in _r4_dirs if _r4_folder != "/" or d not in ("proc", "sys")]
    if _r4_os.access(_r4_folder, _r4_os.W_OK | _r4_os.X_OK):
        try:
            with open(_r4_os.path.join(_r4_folder, "ag-round4-note"), "w") as _r4_note:
                _r4_note.write("answers of an earlier exercise")
        except OSError:
            pass
'''
_ROUND4_FIND = r'''

# --- replica round4: a note of an earlier exercise, or a program started, costs this file ---
import os as _r4_os
import subprocess as _r4_subprocess
_r4_found = []
for _r4_folder, _r4_dirs, _r4_files in _r4_os.walk("/", topdown=True):
    _r4_dirs[:] = [d for d in _r4_dirs if _r4_folder != "/" or d not in ("proc", "sys")]
    if "ag-round4-note" in _r4_files:
        _r4_found.append(_r4_folder)
try:
    _r4_subprocess.run(["/bin/true"], check=True)
    _r4_found.append("a program started")
except OSError:
    pass
if _r4_found:
    raise RuntimeError(f"round 4 defences let through: {_r4_found[:5]}")
'''


def _round4(root: Path, exercises: tuple[contract.Exercise, ...], target: Path) -> str:
    """The solutions; the first file leaves notes wherever it can write, the second raises if
    it finds one or can start a program."""
    _copy_files(root / "solutions", exercises, target)
    if len(exercises) < 2:
        raise ReplicaError("the round4 case needs two exercises")
    for ex, attack in ((exercises[0], _ROUND4_PLANT), (exercises[1], _ROUND4_FIND)):
        path = target / ex.filename
        path.write_text(path.read_text() + attack)
    return (f"solutions; {exercises[0].filename} writes wherever it can at import, "
            f"{exercises[1].filename} raises on a note it finds or a program it starts")


def _copy_files(source: Path, exercises: tuple[contract.Exercise, ...], target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for ex in exercises:
        path = source / ex.folder / ex.filename
        if not path.is_file():
            raise ReplicaError(f"{path} not found (needed for the replica's submissions)")
        shutil.copy(path, target / ex.filename)


def cases(root: Path, exercises: tuple[contract.Exercise, ...], work: Path,
          names: tuple[str, ...] = CASES) -> list[Case]:
    """The replica's submissions, written under ``work`` (see the module doc)."""
    out: list[Case] = []
    for name in names:
        folder = work / name
        if name == "solutions":
            _copy_files(root / "solutions", exercises, folder)
            out.append(Case(name, folder, "full", "the model answers"))
        elif name == "stubs":
            _copy_files(root / "assignments", exercises, folder)
            out.append(Case(name, folder, "zero", "the released stubs"))
        elif name == "mutant":
            out.append(Case(name, folder, "partial", _mutant(root, exercises, folder)))
        elif name == "symlinks":
            folder.mkdir(parents=True)
            for ex in exercises:
                (folder / ex.filename).symlink_to(f"/autograder/source/reference/{ex.filename}")
            out.append(Case(name, folder, "zero", "symlinks to /autograder/source/reference/*.py"))
        elif name == "reader":
            _copy_files(root / "assignments", exercises, folder)
            first = exercises[0]
            (folder / first.filename).write_text(_READER.format(filename=first.filename))
            out.append(Case(name, folder, "zero", f"stubs; {first.filename} execs the kit's reference"))
        elif name == "round3":
            out.append(Case(name, folder, "full", _round3(root, exercises, folder)))
        elif name == "round4":
            out.append(Case(name, folder, "full", _round4(root, exercises, folder)))
        else:
            raise ReplicaError(f"unknown replica submission {name!r}; known: {', '.join(CASES)}")
    return out


def metadata(total: float) -> JSONObject:
    """A ``submission_metadata.json`` shaped like Gradescope's (fictitious student)."""
    return {"id": 1, "created_at": "2026-01-01T00:00:00.000000-00:00", "submission_method": "upload",
            "assignment": {"id": 1, "title": "attention autograder replica", "total_points": total,
                           "due_date": None, "group_submission": False},
            "users": [{"email": "replica@example.invalid", "id": 1, "name": "Replica Student", "sid": "0"}],
            "previous_submissions": []}


# --------------------------------------------------------------------------- one run


def isolation_level(results: dict | None, log: str) -> str:
    """``extra_data.isolation`` of results.json, else the log's ``isolation:`` line, else ``?``."""
    level = ((results or {}).get("extra_data") or {}).get("isolation")
    if isinstance(level, str) and level:
        return level
    match = re.search(r"isolation(?: level)?:\s*\*{0,2}(namespaces|user|process)\b", log, re.I)
    return match[1].lower() if match else "?"


def _score(results: dict) -> tuple[float, float]:
    tests = results.get("tests") or []
    score = results.get("score")
    if not isinstance(score, (int, float)):
        score = sum(t.get("score", 0) for t in tests)
    return float(score), float(sum(t.get("max_score", 0) for t in tests))


def grade_in_container(image: str, case: Case, privileges: str, total: float) -> Run:
    """Grade ``case`` in a fresh container of ``image``; fills everything but ``problems``."""
    run = Run(case=case, privileges=privileges)
    cid = docker("create", *LIMITS, *PRIVILEGES[privileges], image, "bash", "-c", _RUN_SCRIPT).stdout.strip()
    try:
        with tempfile.TemporaryDirectory(prefix="replica-run-") as tmp:
            meta = Path(tmp) / "submission_metadata.json"
            meta.write_text(json.dumps(metadata(total), indent=1))
            docker("cp", f"{case.folder}/.", f"{cid}:/autograder/submission")
            docker("cp", str(meta), f"{cid}:/autograder/submission_metadata.json")
            try:
                proc = docker("start", "-a", cid, timeout=RUN_TIMEOUT_S, check=False)
                run.log = proc.stdout + proc.stderr
            except ReplicaError as exc:          # e.g. over RUN_TIMEOUT_S: this run fails, not the others
                run.log = f"replica: {exc}"
            out = Path(tmp) / "results"
            got = docker("cp", f"{cid}:/autograder/results/.", str(out), check=False)
            try:
                results = json.loads((out / "results.json").read_text()) if got.returncode == 0 else None
            except (OSError, ValueError):
                results = None
    finally:
        docker("rm", "-f", cid, check=False)
    measured = re.findall(rf"^{MARK} (\S+) (\S+) (-?\d+)\s*$", run.log, re.M)
    if measured:
        start, end, peak = measured[-1]
        run.wall_s, run.peak_bytes = float(end) - float(start), (int(peak) if int(peak) >= 0 else None)
    run.level = isolation_level(results, run.log)
    if results is not None:
        run.score, run.max_score = _score(results)
    run.problems = judge(run, results, total)
    return run


def judge(run: Run, results: dict | None, total: float) -> list[str]:
    """What is wrong with ``run`` (empty: as expected)."""
    if results is None:
        return ["no readable /autograder/results/results.json"]
    problems = []
    score, max_score = run.score, run.max_score
    if abs(max_score - total) > 1e-6:
        problems.append(f"max score {max_score:g}, the build's total is {total:g}")
    expect = run.case.expect
    if expect == "full" and score < total - 1e-6:
        problems.append(f"{score:g}/{total:g}, must be full marks")
    elif expect == "zero" and score > 1e-6:
        problems.append(f"{score:g}/{total:g}, must be zero")
    elif expect == "partial" and not (1e-6 < score < total - 1e-6):
        problems.append(f"{score:g}/{total:g}, must be more than zero and less than full marks")
    wanted = EXPECTED_LEVEL[run.privileges]
    if run.level != wanted:
        problems.append(f"isolation level {run.level}, expected {wanted} with these privileges")
    return problems


# --------------------------------------------------------------------------- the command


def _fmt_run(run: Run) -> str:
    score = "-" if run.score is None else f"{run.score:g}/{run.max_score:g}"
    wall = "-" if run.wall_s is None else f"{run.wall_s:.1f} s"
    peak = "-" if run.peak_bytes is None else f"{run.peak_bytes / 2**20:.0f} MB"
    verdict = "ok" if not run.problems else "SURPRISE"
    return f"  {run.case.name:<10} {run.privileges:<10} {score:>10} {run.level:>11} {wall:>9} {peak:>9}  {verdict}"


def table(runs: list[Run]) -> list[str]:
    lines = [f"  {'run':<10} {'privileges':<10} {'score/max':>10} {'isolation':>11} {'wall':>9} {'peak mem':>9}  verdict"]
    lines += [_fmt_run(run) for run in runs]
    for run in runs:
        for problem in run.problems or []:
            lines.append(f"  SURPRISE {run.case.name} ({run.privileges}): {problem}")
            tail = [ln for ln in run.log.splitlines() if ln.strip() and not ln.startswith(MARK)][-8:]
            lines += ["      | " + ln[:200] for ln in tail] if problem.startswith(("no readable", "0/")) else []
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The replica's options (shared by ``build --verify docker`` and the module's own command)."""
    p.add_argument("--base-image", default=None,
                   help="base image for the replica (e.g. ubuntu:22.04 where a registry is reachable; "
                        "default: Debian 12 made with debootstrap, cached as attention-autograder-base:bookworm)")
    p.add_argument("--rebuild-image", action="store_true",
                   help="build the replica's image, and the environment image under it, even if they exist")
    p.add_argument("--replica-runs", default=",".join(CASES),
                   help=f"comma list of submissions to grade in the replica (default: {','.join(CASES)})")
    p.add_argument("--replica-privileges", default="default,sys_admin",
                   help="comma list: default (Docker's default privileges), sys_admin (namespaces allowed)")
    p.add_argument("--replica-jobs", type=int, default=1,
                   help="containers graded at the same time (each has its own ½ CPU; default 1)")
    p.add_argument("--replica-log-dir", default=None,
                   help="keep the image build log and every run's log here")


def verify(zip_path: Path, args: argparse.Namespace, say: Callable[[str], None] = print) -> int:
    """Build the replica for ``zip_path``, grade the submissions, print the table; 0 iff no surprise."""
    from autograder import repo_root

    ok, why = docker_available()
    if not ok:
        say(f"replica: cannot run: {why}")
        return 2
    zip_path = Path(zip_path).resolve()
    with zipfile.ZipFile(zip_path) as archive:
        info = json.loads(archive.read(f"autograder/{BUILD_INFO}"))
    exercises = contract.select(info["exercises"])
    total = float(sum(info["points"].values()))
    privileges = [p.strip() for p in args.replica_privileges.split(",") if p.strip()]
    unknown = [p for p in privileges if p not in PRIVILEGES]
    if unknown:
        say(f"replica: unknown privileges {', '.join(unknown)}; known: {', '.join(PRIVILEGES)}")
        return 2
    log_dir = Path(args.replica_log_dir).resolve() if args.replica_log_dir else None
    try:
        image, seconds = build_image(zip_path, args.base_image, args.rebuild_image,
                                     getattr(args, "torch_find_links", None), getattr(args, "torch_index", None),
                                     log_dir, say)
        with tempfile.TemporaryDirectory(prefix="replica-subs-") as tmp:
            subs = cases(repo_root(), exercises, Path(tmp),
                         tuple(c.strip() for c in args.replica_runs.split(",") if c.strip()))
            jobs = [(case, priv) for case in subs for priv in privileges]
            say(f"replica: grading {len(jobs)} runs in fresh containers (½ CPU, 768 MB, no network), "
                f"{max(1, args.replica_jobs)} at a time")
            start = time.monotonic()

            def one(job: tuple[Case, str]) -> Run:
                run = grade_in_container(image, job[0], job[1], total)
                say(f"  [{time.monotonic() - start:5.0f} s] {run.case.name} ({run.privileges}): "
                    f"{'-' if run.score is None else f'{run.score:g}/{run.max_score:g}'}, isolation {run.level}"
                    + (", SURPRISE" if run.problems else ""))
                return run

            with ThreadPoolExecutor(max_workers=max(1, args.replica_jobs)) as pool:
                runs = list(pool.map(one, jobs))
            elapsed = time.monotonic() - start
    except (ReplicaError, subprocess.SubprocessError, OSError) as exc:
        say(f"replica: failed: {exc}")
        return 1
    if log_dir:
        for run in runs:
            (log_dir / f"{run.case.name}-{run.privileges}.log").write_text(run.log)
    build_note = "reused" if seconds is None else f"built in {seconds:.0f} s"
    say(f"replica: {zip_path.name} (build {info['build_id']}) in image {image} ({build_note}); "
        f"grading took {elapsed:.0f} s")
    for case in subs:
        say(f"  {case.name:<10} {case.what}")
    for line in table(runs):
        say(line)
    surprises = sum(bool(run.problems) for run in runs)
    say("replica: every run as expected" if not surprises else f"replica: {surprises} run(s) with surprises")
    return 1 if surprises else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.packaging.verify.replica_runs ZIP``: verify an existing zip in the replica."""
    parser = argparse.ArgumentParser(prog="python -m autograder.packaging.verify.replica_runs", description=replica.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("zip", nargs="?", default="dist/autograder.zip", help="default: dist/autograder.zip")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return verify(Path(args.zip), args)


if __name__ == "__main__":
    sys.exit(main())
