"""batch leaks no classmate and no name crashes it.

* A student folder named with bytes that are not UTF-8: every student graded, and grades.csv,
  summary.md and histogram.png written, one row each, the name escaped reversibly.
* At the user isolation level, a submission that reads every ``/proc/*/cmdline``, ``environ``
  and ``cgroup`` it can while a classmate is graded next to it (``--jobs 2``) finds no
  classmate's name: graders run with opaque job keys, their paths in a 0600 job file.
* The TA's class folder (and the output folder) keep their mode after a batch at each level.

Batches run through the CLI (``autograder.cli.main``), as this file's own worker users; at
the user level through ``batch.run_batch`` with a Python outside ``/root`` (this machine's venv
lives under a 0700 ``/root``, which the user level rightly refuses; see test_hostile_user_level).
"""
from __future__ import annotations

import csv
import json
import os
import stat
from pathlib import Path

import pytest

from autograder import batch, contract, jobs, textsafe
from autograder.cli import main
from helpers import kit_modes_restored, solution, stub_source

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker users (root)")
EX1 = contract.BY_ID["ex1"]


@pytest.fixture
def user_level(outside_python_path):
    """A Python outside /root for the graders; this checkout's kit folders (which the graders
    lock for the worker user, as on Gradescope) get their modes back afterwards."""
    with kit_modes_restored():
        yield str(outside_python_path)


def _user_batch(folder: Path, out: Path, python: str, jobs_: int = 1):
    """(The level by the environment, which the graders inherit, as `batch --isolation user`.)"""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOGRADER_ISOLATION", "user")
        return batch.run_batch(folder, out, contract.select("ex1"), jobs=jobs_, student_timeout=300,
                               progress=False, python=python)


@pytest.fixture
def class_folder(world_readable_folder):
    return world_readable_folder


def _batch(folder: Path, out: Path, *args: str) -> int:
    return main(["batch", str(folder), "--out", str(out), "--exercises", "ex1", "--no-progress",
                 "--student-timeout", "300", *args])


def _open_to_all(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


# --------------------------------------------------------------------------- names

def test_invalid_utf8_folder_name_gives_a_complete_gradebook(tmp_path, class_folder):
    weird = Path(os.fsdecode(bytes(class_folder) + b"/\xdcbung\x1b"))
    weird.mkdir()
    (weird / "attention.py").write_text(solution("ex1"))
    (class_folder / "ann").mkdir()
    (class_folder / "ann" / "attention.py").write_text(stub_source())
    out = tmp_path / "marks" / "grades.csv"
    assert _batch(class_folder, out, "--jobs", "2") == 0
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 and len(out.read_text(encoding="utf-8").splitlines()) == 3
    by_folder = {r["submission"]: r for r in rows}
    assert set(by_folder) == {"ann", "\\xdcbung\\x1b"}
    assert textsafe.name_bytes("\\xdcbung\\x1b") == b"\xdcbung\x1b"        # reversible
    assert by_folder["\\xdcbung\\x1b"]["total"] == "20" and by_folder["\\xdcbung\\x1b"]["status"] == "ok"
    assert by_folder["ann"]["total"] == "0"
    summary = (out.parent / "summary.md").read_text(encoding="utf-8")
    assert "2 submissions (2 graded" in summary
    assert (out.parent / "histogram.png").stat().st_size > 0


# --------------------------------------------------------------------------- /proc

PROC_PROBE = '''
# Reads every /proc/*/cmdline, environ and cgroup it can while the grading goes on, and
# reports which of the class's names it saw (the grader keeps the message).
import os as _os
import time as _time

_NAMES = @NAMES@
_seen, _graders, _read = set(), set(), 0
_deadline = _time.monotonic() + 8
while _time.monotonic() < _deadline:
    for _pid in _os.listdir("/proc"):
        if not _pid.isdigit():
            continue
        for _what in ("cmdline", "environ", "cgroup"):
            try:
                with open(f"/proc/{_pid}/{_what}", "rb") as _f:
                    _text = _f.read().decode("utf-8", "replace")
            except OSError:
                continue
            _read += 1
            if _what == "cmdline" and "autograder" in _text and "grade" in _text:
                _graders.add(_pid)
            _seen.update(_n for _n in _NAMES if _n in _text)
    if len(_graders) >= 2 and _seen - {@ME@}:
        break
    _time.sleep(0.2)
_REPORT = f"PROBE graders={len(_graders)} read={_read} seen={sorted(_seen)}"


def __getattr__(name):
    def _report(*args, **kwargs):
        raise ValueError(_REPORT)
    return _report
'''


def test_user_level_workers_see_no_classmate_in_proc(tmp_path, class_folder, user_level):
    names = ["zelda_quokka", "yusuf_narwhal"]
    for name in names:
        (class_folder / name).mkdir()
        (class_folder / name / "attention.py").write_text(
            PROC_PROBE.replace("@NAMES@", repr(names)).replace("@ME@", repr(name)))
    _open_to_all(class_folder)
    out = tmp_path / "out" / "grades.csv"
    rows, _ = _user_batch(class_folder, out, user_level, jobs_=2)
    assert [r.status for r in rows] == ["ok", "ok"], [r.reason for r in rows]
    for me, other in (names, names[::-1]):
        data = json.loads((out.parent / "results" / me / "results.json").read_text(encoding="utf-8"))
        assert data["extra_data"]["isolation"] == "user"
        text = json.dumps(data, ensure_ascii=False)
        report = next(t["output"] for t in data["tests"] if "PROBE" in t["output"])
        assert int(report.split("graders=")[1].split()[0]) >= 2, report     # it saw both graders
        assert other not in text and me not in report, report


# --------------------------------------------------------------------------- permissions

@pytest.mark.parametrize("level", ["auto", "user", "process"])
def test_class_and_output_folders_keep_their_modes(tmp_path, class_folder, level, request):
    (class_folder / "ann").mkdir()
    (class_folder / "ann" / "attention.py").write_text(stub_source())
    _open_to_all(class_folder)
    os.chmod(class_folder, 0o751)
    marks = tmp_path / "marks"
    marks.mkdir()
    os.chmod(marks, 0o755)
    before = {p: stat.S_IMODE(os.stat(p).st_mode) for p in (class_folder, class_folder / "ann", marks)}
    if level == "user":
        rows, _ = _user_batch(class_folder, marks / "grades.csv", request.getfixturevalue("user_level"))
        assert rows[0].isolation == "user", rows[0].reason
    else:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("AUTOGRADER_ISOLATION", level)
            assert _batch(class_folder, marks / "grades.csv") == 0
    assert {p: stat.S_IMODE(os.stat(p).st_mode) for p in before} == before
    summary = (marks / "summary.md").read_text(encoding="utf-8")
    assert "neighbours" in summary
    if level == "user":
        assert "neighbours not readable" in summary and "0751" in summary


def test_job_files_are_private_and_round_trip(tmp_path):
    odd = Path(os.fsdecode(b"/x/\xdcbung"))
    path = jobs.write_job(tmp_path, "job-1", odd, tmp_path / "r.json", ["/a", os.fsdecode(b"/\xff")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    job = jobs.read_job(path)
    assert Path(job["submission"]) == odd and job["hide"][1] == os.fsdecode(b"/\xff")
