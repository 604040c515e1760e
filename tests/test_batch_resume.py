"""`batch` resumes: stopped half-way (SIGINT) and started again with the same arguments, it grades
only the submissions without a complete result, and its gradebook equals a run in one go."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.batching import resume
from mutants import mutant_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "ex1_attention" / "attention.py"
STUB = ROOT / "assignments" / "ex1_attention" / "attention.py"
MUTANTS = sorted((Path(__file__).resolve().parent / "submissions" / "ex1" / "mutants").glob("*.diff"))
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def class_folder():
    folder = Path(tempfile.mkdtemp(prefix="ag-resume-class-"))
    os.chmod(folder, 0o755)
    sources = [SOLUTION.read_text(), STUB.read_text(), *(mutant_source(m) for m in MUTANTS[:4])]
    for i, source in enumerate(sources):
        (folder / f"s{i}").mkdir()
        (folder / f"s{i}" / "attention.py").write_text(source)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _batch(subs: Path, out: Path, **popen) -> subprocess.Popen:
    code = "from autograder.cli import main; import sys; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, "batch", str(subs), "--jobs", "1", "--exercises", "ex1",
                             "--out", str(out / "grades.csv"), "--no-progress"],
                            cwd=str(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _markers(out: Path) -> dict[str, str]:
    found = {}
    for marker in (out / "results").glob(f"*/{resume.MARKER}"):
        try:
            found[marker.parent.name] = json.loads(marker.read_text())["run"]
        except (OSError, ValueError, KeyError):
            pass
    return found


def _gradebook(out: Path) -> list[str]:
    return (out / "grades.csv").read_text().splitlines()


def test_stopped_batch_resumes(class_folder, tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    whole.mkdir()
    parts.mkdir()
    one_go = _batch(class_folder, whole)
    _, err = one_go.communicate(timeout=600)
    assert one_go.returncode == 0, err[-2000:]
    assert "kept" not in err

    first = _batch(class_folder, parts)
    deadline = time.monotonic() + 400
    while len(_markers(parts)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130, err[-2000:]
    before = _markers(parts)
    assert 2 <= len(before) < 6
    assert not (parts / "grades.csv").exists()

    second = _batch(class_folder, parts)
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-2000:]
    said = re.search(r"kept (\d+) results from an earlier run; grading (\d+)", err)
    assert said and (int(said[1]), int(said[2])) == (len(before), 6 - len(before)), err[-2000:]
    after = _markers(parts)
    assert {k: after[k] for k in before} == before                   # kept: not graded again
    assert len({after[k] for k in after if k not in before} - set(before.values())) == 1
    assert _gradebook(parts) == _gradebook(whole)

    third = _batch(class_folder, parts)                               # nothing left to grade
    _, err = third.communicate(timeout=300)
    assert "kept 6 results from an earlier run; grading 0" in err
    assert _markers(parts) == after and _gradebook(parts) == _gradebook(whole)


def test_changed_submission_is_graded_again(tmp_path):
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "attention.py").write_text("x = 1\n")
    key = resume.result_key(sub, {"exercises": ["ex1"]})
    assert key == resume.result_key(sub, {"exercises": ["ex1"]})
    assert key != resume.result_key(sub, {"exercises": ["ex1", "ex2"]})
    (sub / "attention.py").write_text("x = 2\n")
    assert key != resume.result_key(sub, {"exercises": ["ex1"]})
