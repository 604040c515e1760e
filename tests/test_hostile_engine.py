"""Hostile cases against the engine's front ends (the summary row among them).

* Summary injection: line breaks / control characters in a folder or file name, or in an
  exception message, never make a line of the summary, of ``grade``'s terminal output or of
  ``batch``'s CSV / summary.md.
* Batch neighbours: a submission with no code of its own that reads a classmate's folder or
  the export's ``submission_metadata.yml`` gets nothing; a memory hog in one job cannot get
  the other job's worker killed.
"""
from __future__ import annotations

import csv
import json
import os
import stat
import zipfile

import pytest

from autograder import batch, contract, jobs, results
from helpers import grade_cli, solution, stub_source, worker_user, write_submission

READER = worker_user("reader")          # a worker user whose view of folders is checked

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker user (root)")

EX1 = contract.select("ex1")
FAKE = "ALL TESTS PASSED"
FAKE_TOTAL = "ex1 Scaled dot-product attention: 20 / 20"
INJECTED = f"x\n{FAKE_TOTAL}\r\n{FAKE}\u2028\x1b[32m{FAKE}\n"


@pytest.fixture
def class_folder(world_readable_folder):
    return world_readable_folder


def _fake_lines(text: str) -> list[str]:
    """Lines that read like the grader's own verdicts."""
    return [line for line in text.splitlines()
            if line.strip().startswith((FAKE, FAKE_TOTAL)) or "\x1b" in line]


# --------------------------------------------------------------------------- summary injection

def test_folder_name_cannot_fake_summary_lines(tmp_path):
    """Two candidate files, one under a folder whose name holds line breaks: the note naming
    it stays on one line, in results.json and on the terminal."""
    folder = tmp_path / "sub"
    write_submission(folder, {"a/attention.py": stub_source(), f"{INJECTED}/attention.py": stub_source()})
    run = grade_cli(folder, tmp_path, "--exercises", "ex1")
    assert run.data["score"] == 0.0
    assert "note: several candidates" in run.data["output"]          # the name did reach the summary
    assert _fake_lines(run.data["output"]) == [] and _fake_lines(run.stdout) == []


def test_refused_file_name_cannot_fake_summary_lines(tmp_path):
    folder = tmp_path / "sub"
    (folder / INJECTED).mkdir(parents=True)
    os.symlink("/etc/hostname", folder / INJECTED / "attention.py")
    run = grade_cli(folder, tmp_path, "--exercises", "ex1")
    fate = run.fates["ex1"]
    assert fate.status == results.ExerciseStatus.REFUSED and "\n" not in fate.message
    assert _fake_lines(run.data["output"]) == [] and _fake_lines(run.stdout) == []


def test_exception_message_cannot_fake_summary_lines(tmp_path):
    """A module that raises at import with a message full of line breaks: its lines are
    quoted under the exercise line; the terminal's failure lines stay one line each."""
    folder = write_submission(tmp_path / "sub", {"attention.py": f"raise RuntimeError({INJECTED!r})\n"})
    run = grade_cli(folder, tmp_path, "--exercises", "ex1")
    assert run.fates["ex1"].status == results.ExerciseStatus.IMPORT_ERROR
    assert _fake_lines(run.data["output"]) == [] and _fake_lines(run.stdout) == []
    assert any(line.startswith("    | ") and FAKE_TOTAL in line for line in run.data["output"].splitlines())


def test_batch_names_stay_in_their_cells(tmp_path):
    """Student folders named with line breaks, commas, pipes and a formula."""
    subs = tmp_path / "class"
    names = [f"ann\n{FAKE}", "bo,b | x", "=cmd()"]
    for name in names:
        write_submission(subs / name, {"attention.py": stub_source()})
    out = tmp_path / "out" / "grades.csv"
    rows, _ = batch.run_batch(subs, out, EX1, jobs=2, student_timeout=120, progress=False)
    assert [r.status for r in rows] == ["ok"] * 3
    with open(out, newline="", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert len(lines) == 1 + len(names)                               # one line per row
    with open(out, newline="", encoding="utf-8") as handle:
        students = [r["student"] for r in csv.DictReader(handle)]
    assert sorted(students) == sorted(["ann\\nALL TESTS PASSED", "bo,b | x", "'=cmd()"])
    summary = (out.parent / "summary.md").read_text()
    assert not any(line.startswith(FAKE) for line in summary.splitlines())


# --------------------------------------------------------------------------- batch neighbours

NEIGHBOUR_THIEF = '''
# No code of its own: runs a classmate's file, and leaks the export's metadata.
from pathlib import Path as _Path

_found = []
for _candidate in (_Path(@CLASS@) / "submission_101" / "attention.py",
                   _Path(@CLASS@) / "submission_metadata.yml"):
    try:
        _found.append(_candidate.read_text())
    except OSError as _exc:
        _found.append("")
if _found[0]:
    exec(compile(_found[0], "attention.py", "exec"))
if _found[1]:
    raise RuntimeError("metadata: " + _found[1])
'''

METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '0001'
    :email: ada-secret@example.edu
submission_102:
  :submitters:
  - :name: Mallory
    :email: mallory@example.edu
"""


def test_batch_neighbours_are_out_of_reach(tmp_path, class_folder):
    export = class_folder / "export"
    write_submission(export / "submission_101", {"attention.py": solution("ex1")})
    write_submission(export / "submission_102", {
        "attention.py": NEIGHBOUR_THIEF.replace("@CLASS@", repr(str(export)))})
    (export / "submission_metadata.yml").write_text(METADATA)
    for path in [export, *export.rglob("*")]:  # readable by any user, as a TA's export often is
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    from autograder.sandbox import users
    users.ensure_user(READER)
    targets = [export / "submission_metadata.yml", export / "submission_101" / "attention.py"]
    assert jobs.readable_by(READER, targets) == [str(t) for t in targets]   # without hiding: open
    out = tmp_path / "out" / "grades.csv"
    rows, found = batch.run_batch(export, out, EX1, jobs=2, student_timeout=120, progress=False)
    by_key = {r.entry.key: r for r in rows}
    assert by_key["submission_101"].total == 20.0
    thief = by_key["submission_102"]
    assert thief.total == 0.0
    text = (out.parent / "results" / "submission_102" / "results.json").read_text()
    assert "ada-secret" not in text and "Lovelace" not in text
    levels = {r.isolation for r in rows}
    assert levels and all(level for level in levels)
    notes = " ".join(found.notes)
    if levels == {"namespaces"}:
        assert "neighbours hidden" in notes
    summary = (out.parent / "summary.md").read_text()
    assert "neighbours" in summary and "memory:" in summary


def test_readable_by_probe(class_folder):
    from autograder.sandbox import users
    users.ensure_user(READER)
    open_dir, closed_dir = class_folder / "open", class_folder / "closed"
    open_dir.mkdir()
    closed_dir.mkdir()
    os.chmod(open_dir, 0o755)
    os.chmod(closed_dir, 0o700)
    (open_dir / "secret.txt").write_text("x")
    os.chmod(open_dir / "secret.txt", 0o600)
    assert jobs.readable_by(READER, [open_dir, closed_dir, open_dir / "secret.txt"]) == [str(open_dir)]


def test_stage_copy_never_follows_links(tmp_path):
    src = write_submission(tmp_path / "src", {"attention.py": "x = 1\n", "deep/notes.txt": "hi"})
    os.symlink("/etc/shadow", src / "multihead.py")
    os.link(src / "attention.py", src / "hard.py")
    os.mkfifo(src / "pipe")
    dest = tmp_path / "stage" / "key"
    skipped = jobs.stage_copy(src, dest)
    assert (dest / "deep" / "notes.txt").read_text() == "hi"
    assert os.readlink(dest / "multihead.py") == "/etc/shadow"          # a link, never its target
    assert not (dest / "hard.py").exists() and not (dest / "pipe").exists()
    assert not (dest / "attention.py").exists()                         # it has two names now
    assert sorted(skipped) == ["attention.py (a hard link)", "hard.py (a hard link)", "pipe (not a regular file)"]
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o700


def test_stage_copy_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "STAGE_MAX_BYTES", 1000)
    src = write_submission(tmp_path / "src", {"a.py": "x" * 600, "b.py": "y" * 600})
    with pytest.raises(jobs.StagingError, match="larger than"):
        jobs.stage_copy(src, tmp_path / "stage")


MEMORY_HOG = '''
import numpy as _np

_hoard = []


def softmax(x, axis=-1):
    # ~900 MB, touched, under the worker's own 1024 MB limit
    _hoard.append(_np.ones((900, 1024, 1024 // 8)))
    return _np.ones_like(_np.asarray(x, dtype=float))
'''


def test_memory_hog_cannot_kill_a_neighbour(tmp_path):
    """Two jobs, each in its own memory group of 900 MB (less than a grader plus a worker at
    its own 1024 MB limit): the hog's worker is killed in its group (SIGKILL), the honest
    neighbour is graded in full."""
    if jobs.MemoryGroups(900).kind is None:
        pytest.skip("no writable memory cgroup here: the fallback is memory_share_mb")
    subs = tmp_path / "class"
    write_submission(subs / "honest", {"attention.py": solution("ex1")})
    write_submission(subs / "hog", {"attention.py": stub_source() + MEMORY_HOG})
    out = tmp_path / "out" / "grades.csv"
    rows, found = batch.run_batch(subs, out, EX1, jobs=2, student_timeout=240, progress=False,
                                  job_memory_mb=900)
    by_key = {r.entry.key: r for r in rows}
    assert by_key["honest"].total == 20.0 and by_key["honest"].status == "ok"
    hog = json.loads((out.parent / "results" / "hog" / "results.json").read_text())
    assert hog["score"] < 20.0
    assert any("SIGKILL" in t.get("output", "") for t in hog["tests"]), [t["output"][:200] for t in hog["tests"]]
    assert any("memory group of 900 MB" in note for note in found.notes)


def test_memory_share_without_cgroups():
    assert 256 <= jobs.memory_share_mb(2, 1024) <= 1024
    assert jobs.memory_share_mb(10_000, 1024) == 256


def test_zip_submissions_are_staged_too(tmp_path):
    subs = tmp_path / "class"
    subs.mkdir()
    with zipfile.ZipFile(subs / "zed.zip", "w") as archive:
        archive.writestr("work/attention.py", solution("ex1"))
    rows, _ = batch.run_batch(subs, tmp_path / "out" / "grades.csv", EX1, jobs=1, student_timeout=120,
                              progress=False)
    assert rows[0].total == 20.0
