"""`python -m autograder batch`: a class at once, each student in its own grader subprocess."""
from __future__ import annotations

import csv
import json
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import batch, contract, gradebook
from autograder.sandbox.limits import default_worker_user
from autograder.batching.discovery import Entry
from autograder.batching.runner import Row
from autograder.suites.ex1_attention.causes import Ex1Cause
from mutants import mutant_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "ex1_attention" / "attention.py"
MUTANT = Path(__file__).resolve().parent / "submissions" / "ex1" / "mutants" / "np_no_sqrt_scaling.diff"
EX1 = contract.select("ex1")

METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '0001'
    :email: ada@example.edu
  :created_at: 2024-03-01 10:00:00.000000000 +00:00
  :score: 0.0
submission_102:
  :submitters:
  - :name: Alan Turing
    :email: alan@example.edu
  - :name: Grace Hopper
    :email: grace@example.edu
"""


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def plain_batch(tmp_path_factory):
    """alice (a folder, correct), bob (a zip, a known mistake), carol (a broken zip),
    dave (hangs at import: stopped by the per-student timeout), and a stray file."""
    subs = tmp_path_factory.mktemp("subs")
    (subs / "alice" / "work").mkdir(parents=True)
    (subs / "alice" / "work" / "attention.py").write_bytes(SOLUTION.read_bytes())
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        archive.writestr("bob/attention.py", mutant_source(MUTANT))
    (subs / "carol.zip").write_bytes(b"PK\x03\x04 this is not really a zip")
    (subs / "dave").mkdir()
    (subs / "dave" / "attention.py").write_text("import time\nwhile True:\n    time.sleep(1)\n")
    (subs / "notes.txt").write_text("not a submission")
    out = tmp_path_factory.mktemp("out") / "grades.csv"
    rows, found = batch.run_batch(subs, out, EX1, jobs=2, student_timeout=12, progress=False)
    return out, rows, found


def test_plain_batch_gradebook(plain_batch):
    out, rows, found = plain_batch
    assert found.ignored == ["notes.txt"]
    table = {r["student"]: r for r in _rows(out)}
    assert list(next(iter(table.values()))) == ["student", "email", "sid", "submission", "group", "ex1",
                                                "total", "max_total", "status", "reason"]
    assert sorted(table) == ["alice", "bob", "carol", "dave"]
    assert table["alice"]["ex1"] == table["alice"]["total"] == "20" and table["alice"]["status"] == "ok"
    assert table["alice"]["max_total"] == "20"
    if MUTANT.is_file():
        assert 0 < float(table["bob"]["total"]) < 20 and table["bob"]["status"] == "ok"
    assert table["bob"]["submission"] == "bob.zip"
    assert (table["carol"]["status"], table["carol"]["total"]) == ("no files", "0")
    assert table["dave"]["status"] == "timeout" and table["dave"]["total"] == "0"
    assert "longer than 12 s" in table["dave"]["reason"]


def test_plain_batch_files(plain_batch):
    out, rows, _ = plain_batch
    folder = out.parent
    for name in ("alice", "bob", "carol", "dave"):
        data = json.loads((folder / "results" / name / "results.json").read_text())
        assert {"score", "tests", "output"} <= set(data)
        assert (folder / "results" / name / "grade.log").is_file()
    dave = json.loads((folder / "results" / "dave" / "results.json").read_text())
    assert dave["score"] == 0 and "could not be graded automatically" in dave["output"]
    assert (folder / "histogram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (folder / "summary.md").read_text()
    assert "# Batch grading summary" in summary and "![Score histogram](histogram.png)" in summary
    assert "| dave | `dave` | timeout |" in summary and "| carol | `carol.zip` | no files |" in summary
    assert "[`report.html`](report.html)" in summary and "## Pass rate per test" not in summary   # short now
    report = (folder / "report.html").read_text()
    assert ">1 / 2<" in report                                     # a test alice passes and bob fails
    if MUTANT.is_file():
        assert "Likely cause: your" not in summary                 # the hint text itself, not the prefix
        assert "1/√d_k" in summary.split("## Most common misconceptions")[1]


def test_gradescope_export(tmp_path):
    export = tmp_path / "assignment_export"
    (export / "submission_101").mkdir(parents=True)
    (export / "submission_101" / "attention.py").write_bytes(SOLUTION.read_bytes())
    (export / "submission_102").mkdir()
    (export / "submission_102" / "README.txt").write_text("forgot the file")
    (export / "submission_metadata.yml").write_text(METADATA)
    rows, found = batch.run_batch(tmp_path, tmp_path / "out" / "grades.csv", EX1, jobs=2,
                                  progress=False)          # the export one level down is found
    assert found.gradescope
    table = _rows(tmp_path / "out" / "grades.csv")
    group = "Alan Turing & Grace Hopper"            # each member a row of their own, the group's grade
    assert [(r["student"], r["email"], r["sid"], r["submission"], r["group"], r["total"], r["status"])
            for r in table] == [
        ("Ada Lovelace", "ada@example.edu", "0001", "submission_101", "", "20", "ok"),
        ("Alan Turing", "alan@example.edu", "", "submission_102", group, "0", "no files"),
        ("Grace Hopper", "grace@example.edu", "", "submission_102", group, "0", "no files")]
    assert (tmp_path / "out" / "results" / "submission_101" / "results.json").is_file()


def test_gradescope_export_without_pyyaml(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)          # `import yaml` raises ImportError
    (tmp_path / "submission_7").mkdir()
    (tmp_path / "submission_metadata.yml").write_text(METADATA)
    found = batch.discover(tmp_path)
    assert [(e.student, e.key) for e in found.entries] == [("submission_7", "submission_7")]
    assert "PyYAML is not installed" in found.notes[0]


def test_names_become_unique_safe_folder_keys(tmp_path):
    for name in ("Jo Doe", "jo_doe", "x"):
        (tmp_path / name).mkdir()
    (tmp_path / "Jo Doe.zip").write_bytes(b"")
    keys = [e.key for e in batch.discover(tmp_path).entries]
    assert keys == ["Jo_Doe", "Jo_Doe_2", "jo_doe_3", "x"]


def test_a_crashing_grader_is_a_zero_row(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Traceback: something broke' >&2\nexit 3\n")
    fake.chmod(0o755)
    (tmp_path / "subs" / "eve").mkdir(parents=True)
    rows, _ = batch.run_batch(tmp_path / "subs", tmp_path / "grades.csv", EX1, jobs=1,   # a fake `grade`:
                              progress=False, python=str(fake), warm=False)          # the cold path
    (row,) = rows
    assert (row.status, row.total) == ("error", 0.0)
    assert "exited with code 3" in row.reason and "something broke" in row.reason
    assert json.loads((tmp_path / "results" / "eve" / "results.json").read_text())["score"] == 0


def test_a_batch_that_cannot_start_its_graders_leaves_no_private_folder(tmp_path, monkeypatch):
    """Its graders' pool refused after the batch made its private staging folder (a Dask
    cluster that refuses, say): the error reaches the caller and the folder is gone. (It was
    removed only when grading ended or was interrupted: each refused start left one in /tmp.)"""
    import tempfile

    from autograder.batching import cluster

    class Refused(RuntimeError):
        pass

    def refuse(*_args, **_kwargs):
        raise Refused("the cluster refused")

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))        # where the private folder is made
    monkeypatch.setattr(cluster, "choose_pool", refuse)
    (tmp_path / "subs" / "eve").mkdir(parents=True)
    (tmp_path / "subs" / "eve" / "attention.py").write_text("x = 1\n")
    with pytest.raises(Refused):
        batch.run_batch(tmp_path / "subs", tmp_path / "out" / "grades.csv", EX1, jobs=1, progress=False)
    assert list(scratch.iterdir()) == []


def test_misconceptions_are_counted_once_per_submission():
    entry = Entry("s", "s", Path("s"))
    fail = {"status": "failed", "tags": ["ex1"], "output": "x\nLikely cause: …",
            "extra_data": {"cause": ["ex1.no_scale"]}}
    both = {"status": "failed", "tags": ["ex1"], "output": "x\nLikely cause: …",
            "extra_data": {"cause": ["ex1.no_scale", "ex1.wrong_axis"]}}
    rows = [Row(entry, tests=[fail, fail]), Row(entry, tests=[fail, both]),
            Row(entry, tests=[{"status": "passed", "tags": ["ex1"], "output": ""}])]
    no_scale, wrong_axis = Ex1Cause.NO_SCALE.sentence, Ex1Cause.WRONG_AXIS.sentence
    assert gradebook.misconceptions(rows) == [("ex1", no_scale, 2), ("ex1", f"{no_scale}\n  or: {wrong_axis}", 1)]


def test_misconceptions_come_from_the_structure_not_the_text():
    """A student's exception message that prints "Likely cause: …" is not a cause."""
    entry = Entry("s", "s", Path("s"))
    forged = {"status": "failed", "tags": ["ex1"], "output": "raised ValueError: x\nLikely cause: forged"}
    assert gradebook.misconceptions([Row(entry, tests=[forged])]) == []


def test_cli_batch_on_an_empty_folder(tmp_path, capsys):
    from autograder.cli import main
    (tmp_path / "subs").mkdir()
    assert main(["batch", str(tmp_path / "subs"), "--out", str(tmp_path / "o" / "g.csv"), "--no-progress"]) == 0
    assert "0 submissions" in capsys.readouterr().out
    assert (tmp_path / "o" / "g.csv").read_text().startswith("student,email,sid,submission,group,ex1,")
    assert (tmp_path / "o" / "summary.md").is_file() and (tmp_path / "o" / "histogram.png").is_file()
    assert (tmp_path / "o" / "report.html").is_file()
    assert main(["batch", str(tmp_path / "missing"), "--out", str(tmp_path / "g.csv")]) == 2


def test_parallel_jobs_run_as_different_worker_users(tmp_path, monkeypatch):
    """RLIMIT_NPROC counts per user: two graders at once must not share a worker user."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "--worker-user" ]; do shift; done\n'
                    'echo "$2 start" >> "$LOG"; sleep 1; echo "$2 end" >> "$LOG"\nexit 3\n')
    fake.chmod(0o755)
    for name in ("a", "b", "c", "d"):
        (tmp_path / "subs" / name).mkdir(parents=True)
    log = tmp_path / "users.log"
    monkeypatch.setenv("LOG", str(log))
    batch.run_batch(tmp_path / "subs", tmp_path / "grades.csv", EX1, jobs=2,      # a fake `grade`:
                    progress=False, python=str(fake), warm=False)                 # the cold path
    running: set[str] = set()
    for line in log.read_text().splitlines():
        user, event = line.split()
        if event == "start":
            assert user not in running, "two jobs ran as the same worker user at once"
            running.add(user)
        else:
            running.discard(user)
    base = default_worker_user()
    assert {ln.split()[0] for ln in log.read_text().splitlines()} == {base, f"{base}2"}


def test_the_similarity_check_runs_beside_the_grading(tmp_path, monkeypatch):
    """The similarity check starts before the first submission is graded, on a thread of its
    own (it reads the submissions' files, never a result), and the report shows what it found:
    two copies of one file, one pair."""
    import threading
    from autograder.staff import similarity

    subs, out = tmp_path / "subs", tmp_path / "out" / "grades.csv"
    for student in ("ann", "ben"):
        (subs / student).mkdir(parents=True)
        (subs / student / "attention.py").write_bytes(SOLUTION.read_bytes())
    started = []
    real = similarity.find_similar

    def spy(candidates, exercises, threshold):
        graded_yet = sorted(p.parent.name for p in (out.parent / "results").glob("*/results.json"))
        started.append((threading.current_thread().name, graded_yet, [c.name for c in candidates]))
        return real(candidates, exercises, threshold)

    monkeypatch.setattr(similarity, "find_similar", spy)
    rows, _ = batch.run_batch(subs, out, EX1, jobs=1, progress=False)
    assert [r.status.value for r in rows] == ["ok", "ok"]
    assert started == [("similarity", [], ["ann", "ben"])]
    report = (out.parent / "report.html").read_text(encoding="utf-8")
    assert '<b id="similar-count">1</b>' in report
