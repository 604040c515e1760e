"""`batch --scheduler`: a class graded on a real Dask cluster (a ``dask scheduler`` and two
``dask worker`` processes on 127.0.0.1, ``tests/local_dask.py``), one worker SIGKILLed while
it grades, after the first result came back. The gradebook must equal the local batch's, with
no row lost or duplicated; every submission graded as a worker user, like a local batch.

The class: the ex1 solution, the stub, a known mistake (as a zip), a submission whose
``attention.py`` is a symbolic link (refused by intake: links must travel as links), and
``kill_the_grader`` from the hostile corpus (signals everything it can see).
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from autograder import batch, contract
from autograder.batching import cluster, resume
from autograder.batching.runner import Runner
from autograder.sandbox.limits import default_worker_user
from mutants import mutant_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "ex1_attention" / "attention.py"
STUB = ROOT / "assignments" / "ex1_attention" / "attention.py"
MUTANT = Path(__file__).resolve().parent / "submissions" / "ex1" / "mutants" / "np_no_sqrt_scaling.diff"
EX1 = contract.select("ex1")
STUDENT_TIMEOUT = 400


@pytest.fixture(scope="module")
def class_folder():
    from hostile_cases import render
    folder = Path(tempfile.mkdtemp(prefix="ag-dask-class-"))
    os.chmod(folder, 0o755)
    (folder / "s0_solution").mkdir()
    (folder / "s0_solution" / "attention.py").write_text(SOLUTION.read_text())
    (folder / "s1_stub").mkdir()
    (folder / "s1_stub" / "attention.py").write_text(STUB.read_text())
    with zipfile.ZipFile(folder / "s2_mutant.zip", "w") as archive:
        archive.writestr("s2/attention.py", mutant_source(MUTANT))
    (folder / "s3_link").mkdir()
    os.symlink("../s0_solution/attention.py", folder / "s3_link" / "attention.py")
    (folder / "s4_kill").mkdir()
    hostile = (ROOT / "tests" / "hostile" / "kill_the_grader" / "attention.py").read_text()
    (folder / "s4_kill" / "attention.py").write_text(render(hostile, "dasktoken", "dasksecret"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def dask_cluster(request):
    pytest.importorskip("distributed")
    from local_dask import LocalDask
    started = LocalDask(workers=2, nthreads=1)
    request.addfinalizer(started.close)
    return started


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _tests(out: Path, key: str) -> list[dict]:
    return json.loads((out / "results" / key / "results.json").read_text())["tests"]


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the worker users need root")
def test_cluster_gradebook_equals_local_with_a_worker_killed(class_folder, dask_cluster, tmp_path, monkeypatch):
    local, remote = tmp_path / "local", tmp_path / "cluster"
    batch.run_batch(class_folder, local / "grades.csv", EX1, jobs=2, progress=False,
                    student_timeout=STUDENT_TIMEOUT)

    from distributed import Client
    seen: dict = {}
    pools: list = []
    choose = cluster.choose_pool
    killed = None

    def remember(*args, **kwargs):
        pools.append(choose(*args, **kwargs))
        return pools[-1]

    def run() -> None:
        try:
            seen["rows"], _ = batch.run_batch(class_folder, remote / "grades.csv", EX1, jobs=1, progress=False,
                                              student_timeout=STUDENT_TIMEOUT, scheduler=dask_cluster.address)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions below
            seen["error"] = exc

    monkeypatch.setattr(cluster, "choose_pool", remember)
    grading = threading.Thread(target=run, daemon=True)
    grading.start()
    with Client(dask_cluster.address, timeout=60, set_as_default=False) as client:
        deadline = time.monotonic() + 900
        while grading.is_alive() and time.monotonic() < deadline and killed is None:
            first_result = any((remote / "results").glob(f"*/{resume.MARKER}"))
            busy = {addr: keys for addr, keys in client.processing().items() if keys}
            if first_result and busy:
                names = {addr: info["name"] for addr, info in client.scheduler_info()["workers"].items()}
                addr, keys = sorted(busy.items())[0]
                killed = (addr, list(keys))
                dask_cluster.kill_worker(int(str(names[addr]).removeprefix("w")))
            time.sleep(0.2)
        grading.join(timeout=max(1.0, deadline - time.monotonic()))
    assert not grading.is_alive(), "the batch did not finish in time"
    assert "error" not in seen, repr(seen.get("error"))
    assert killed is not None, "no worker was busy after the first result: nothing was killed"
    assert len(seen["rows"]) == 5

    local_rows, remote_rows = _csv(local / "grades.csv"), _csv(remote / "grades.csv")
    assert [r["student"] for r in remote_rows] == sorted(p.stem for p in class_folder.iterdir())   # none lost
    assert remote_rows == local_rows                                   # or duplicated, or graded otherwise
    table = {r["student"]: r for r in remote_rows}
    assert table["s0_solution"]["total"] == "20" and table["s1_stub"]["total"] == "0"
    assert 0 < float(table["s2_mutant"]["total"]) < 20
    assert "refused" in table["s3_link"]["reason"]
    assert table["s4_kill"]["total"] == "0"
    for key in table:
        assert _tests(remote, key) == _tests(local, key), key

    (pool,) = pools
    graded_by = pool.graded_by
    assert len(graded_by) == len(table)                               # one grading each (opaque job keys)
    moved = [key for key, task in pool.task_keys.items() if task in killed[1]]
    assert moved and all(graded_by[key][0] != killed[0] for key in moved)   # its tasks graded elsewhere
    base = default_worker_user()
    assert {user for _, user in graded_by.values()} <= {base, f"{base}2"}
    assert "cluster: graded by Dask worker" in (remote / "results" / "s0_solution" / "grade.log").read_text()
    isolation = json.loads((remote / "results" / "s0_solution" / "results.json").read_text())["extra_data"]
    assert isolation["isolation"] == json.loads(
        (local / "results" / "s0_solution" / "results.json").read_text())["extra_data"]["isolation"]
    summary = (remote / "summary.md").read_text()
    assert "# Batch grading summary" in summary and (remote / "histogram.png").is_file()

    again = batch.run_batch(class_folder, remote / "grades.csv", EX1, jobs=1, progress=False,   # resumes:
                            student_timeout=STUDENT_TIMEOUT, scheduler=dask_cluster.address)  # nothing
    assert _csv(remote / "grades.csv") == local_rows and len(again[0]) == 5                     # to grade


# --------------------------------------------------------------------------- without a cluster

def test_pack_is_deterministic_and_round_trips(tmp_path):
    src = tmp_path / "stage" / "sub"
    (src / "nested" / "deeper").mkdir(parents=True)
    (src / "attention.py").write_text("x = 1\n")
    (src / "nested" / "deeper" / "data.bin").write_bytes(bytes(range(256)) * 10)
    (src / "work.zip").write_bytes(b"PK\x03\x04 not really")
    os.symlink("../attention.py", src / "nested" / "link.py")
    os.symlink("/etc/passwd", src / "outside")
    blob = cluster.pack(src)
    os.utime(src / "attention.py", (1, 1))
    assert cluster.pack(src) == blob                                  # times are not packed
    dest = tmp_path / "out" / "sub"
    cluster.unpack(blob, dest)
    assert (dest / "attention.py").read_text() == "x = 1\n"
    assert (dest / "nested" / "deeper" / "data.bin").read_bytes() == bytes(range(256)) * 10
    assert os.readlink(dest / "nested" / "link.py") == "../attention.py"     # a link, not followed
    assert os.readlink(dest / "outside") == "/etc/passwd"
    assert resume.submission_digest(dest) == resume.submission_digest(src)
    assert cluster.pack(dest) == blob


@pytest.mark.parametrize("name", ["../escape.py", "/abs.py", "a/../../b.py", "link/through.py"])
def test_unpack_refuses_unsafe_entries(tmp_path, name):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        link = tarfile.TarInfo("link")
        link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path)
        tar.addfile(link)
        data = b"print('x')\n"
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(Exception) as caught:
        cluster.unpack(raw.getvalue(), tmp_path / "dest")
    assert isinstance(caught.value, (cluster.private_jobs.StagingError, OSError))
    assert not (tmp_path / "escape.py").exists() and not (tmp_path / "through.py").exists()


def test_a_worker_with_another_build_refuses_the_task():
    task = {"build": "some-other-build", "settings": {}, "runner": Runner, "top": "x", "sub": "", "blob": b""}
    with pytest.raises(cluster.BuildMismatch, match="the batch is build some-other-build"):
        cluster.grade_task(task)


def test_without_dask_scheduler_says_how_to_install(tmp_path, monkeypatch, capsys):
    import sys

    from autograder.cli import main
    monkeypatch.setitem(sys.modules, "distributed", None)             # `import distributed` fails
    monkeypatch.setattr(batch, "interrupt_on_termination", lambda: None)   # keep pytest's signals
    (tmp_path / "subs" / "a").mkdir(parents=True)
    code = main(["batch", str(tmp_path / "subs"), "--out", str(tmp_path / "g.csv"), "--exercises", "ex1",
                 "--scheduler", "tcp://127.0.0.1:9", "--no-progress"])
    assert code == 2
    assert "[cluster]" in capsys.readouterr().err


REACH_SCHEDULER = '''

import socket as _socket
_reached = []
for _port in @PORTS@:
    try:
        _socket.create_connection(("127.0.0.1", _port), timeout=2).close()
        _reached.append(_port)
    except OSError:
        pass
if _reached:
    raise RuntimeError(f"reached the cluster at ports {_reached}")
for _path in @KEYS@:
    try:
        open(_path, "rb").read()
        raise RuntimeError(f"read the cluster's key {_path}")
    except OSError:
        pass
'''


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the worker users need root")
def test_a_tls_cluster_grades_and_student_code_cannot_reach_it(tmp_path):
    """A tls:// scheduler: the batch connects with the TA's credentials (a plain client does
    not get in), and a submission that tries to connect to the scheduler or the workers, or to
    read their key, reaches nothing: its honest solution keeps full marks."""
    pytest.importorskip("distributed")
    from distributed import Client

    from local_dask import LocalDask
    started = LocalDask(workers=1, nthreads=1, tls=True)
    try:
        assert started.address.startswith("tls://")
        with pytest.raises((OSError, TimeoutError)):
            Client(started.address.replace("tls://", "tcp://"), timeout=5, set_as_default=False)
        ports = [int(started.address.rsplit(":", 1)[1])]
        key = started.tls_files[2]
        subs = tmp_path / "class"
        (subs / "honest").mkdir(parents=True)
        (subs / "honest" / "attention.py").write_text(SOLUTION.read_text())
        (subs / "reacher").mkdir()
        (subs / "reacher" / "attention.py").write_text(
            SOLUTION.read_text() + REACH_SCHEDULER.replace("@PORTS@", repr(ports)).replace("@KEYS@", repr([str(key)])))
        with pytest.raises(cluster.ClusterError, match="TLS scheduler"):
            batch.run_batch(subs, tmp_path / "none" / "grades.csv", contract.select("ex1"), progress=False,
                            scheduler=started.address)
        ca, cert, key_file = (str(p) for p in started.tls_files)
        rows, _ = batch.run_batch(subs, tmp_path / "out" / "grades.csv", contract.select("ex1"), jobs=2,
                                  progress=False, scheduler=started.address, student_timeout=STUDENT_TIMEOUT,
                                  tls=cluster.Tls(ca, cert, key_file))
        totals = {row.entry.key: (row.status, row.total) for row in rows}
        assert totals == {"honest": ("ok", 20.0), "reacher": ("ok", 20.0)}, totals
    finally:
        started.close()
