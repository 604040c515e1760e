"""Every string that crosses into the grader is made safe where it enters: exception
messages, printed output, file and folder names, notebook text and worker replies get lone surrogates, undecodable bytes and control characters escaped and their
lengths capped in bytes; results.json stays under 1,000,000 bytes whatever the submission.

The first tests are units (textsafe, results, wire, output, intake); the ``cli_`` ones grade
for real through ``python -m autograder grade`` as this file's own worker user (root only).
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import contract, intake, results, textsafe
from autograder.sandbox import protocol, wire
from helpers import worker_user
from helpers import grader_env, solution
import warm_cli

WORKER_USER = worker_user("bstr")
UNSAFE_SPRAY = "".join(chr(c) for c in range(0x20)) + "\x7f\x85\u2028\u2029\u202a\u202b\u202d\u202e\u2066\u2069"
ORDINARY = "softmax · max |Δ| = 1.5e-03 … ≈ × ‖w‖ — naïve Übung 注意 😀\n\tindented"
SURROGATE_MESSAGE = os.fsdecode(b"cannot read weights_\xff\xfe.npy")   # what os.fsdecode gives raw bytes
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="grades with its own worker user (root)")


def _assert_safe(text: str, *, lines: bool = True) -> None:
    text.encode("utf-8")                      # no lone surrogate
    allowed = {"\n", "\t"} if lines else {"\t"}
    assert not [c for c in text if (ord(c) < 0x20 and c not in allowed) or 0x7f <= ord(c) <= 0x9f
                or c in "\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]


# --------------------------------------------------------------------------- textsafe

def test_control_spray_and_rtl_overrides_become_visible_escapes():
    for text in (textsafe.text(UNSAFE_SPRAY * 3), textsafe.one_line(UNSAFE_SPRAY * 3, None)):
        _assert_safe(text, lines="\n" in text)
        assert "\\x01" in text and "\\x1b" in text and "\\u202e" in text
    assert "\n" not in textsafe.one_line("a\nb\r\nc\u2028d", None)


def test_lone_surrogates_and_undecodable_bytes_become_escapes():
    assert textsafe.text(SURROGATE_MESSAGE) == "cannot read weights_\\xff\\xfe.npy"
    assert textsafe.text("\ud800x") == "\\ud800x"
    assert textsafe.from_bytes(b"ok \xff\xc3") == "ok \\xff\\xc3"


def test_caps_are_bytes_and_never_split_a_character():
    huge = "😀" * 100_000 + "é" * 3
    for cap in (1, 2, 5, 1000, 4001):
        out = textsafe.text(huge, cap)
        assert len(out.encode("utf-8")) <= cap
    assert textsafe.one_line("x" * 10, 10) == "x" * 10


def test_ordinary_text_passes_unchanged_and_safe_text_is_stable():
    assert textsafe.text(ORDINARY) == ORDINARY
    assert textsafe.scrub({"a": [ORDINARY]}) == {"a": [ORDINARY]}
    once = textsafe.text(UNSAFE_SPRAY + SURROGATE_MESSAGE)
    assert textsafe.text(once) == once and textsafe.one_line(once, None) == once.replace("\n", "\\n")


@pytest.mark.parametrize("raw", [b"\xdcbung", b"a\\b\nc\x01", "\u202eevil.py".encode(), b"\xff\\x41\\",
                                 "Übung 注意".encode(), bytes(range(1, 256)).replace(b"/", b"")])
def test_names_are_escaped_reversibly(raw):
    for value in (raw, os.fsdecode(raw)):
        shown = textsafe.name(value, None)
        _assert_safe(shown, lines=False)
        assert textsafe.name_bytes(shown) == raw
    assert textsafe.name("Übung") == "Übung"


# --------------------------------------------------------------------------- results.json

def _spray_results(n_tests: int = 142) -> results.Results:
    tests = [results.TestResult("ex1", f"test {i}", 1.0, output=f"your code raised ValueError: {chr(1) * 9000}"
                                "\nwhere (most recent call last):\n" + "\x01" * 9000) for i in range(n_tests)]
    return results.Results(tests=tests, output="Total: 0 / 142")


def test_results_file_is_capped_in_bytes_whatever_the_outputs(tmp_path):
    """The observed case (U+0001 messages in 142 tests: 3.57 MB) and 4-byte characters."""
    for fill in ("\x01", "😀", '"\\'):
        data = _spray_results().to_json()
        for t in data["tests"]:
            t["output"] = "your code raised ValueError: boom\n" + fill * 30_000
        results.write_atomic(tmp_path / "r.json", data)
        size = (tmp_path / "r.json").stat().st_size
        assert size < 1_000_000, (fill, size)
        back = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
        assert len(back["tests"]) == 142
        assert all(t["output"].startswith("your code raised ValueError: boom\n") for t in back["tests"])
    results.write_atomic(tmp_path / "s.json", _spray_results().to_json())
    assert (tmp_path / "s.json").stat().st_size < 1_000_000


def test_results_writer_survives_lone_surrogates(tmp_path):
    """The observed crash: json.dump(..., ensure_ascii=False) cannot encode a lone surrogate."""
    outcome = results.Results(tests=[results.TestResult("ex1", "t", 20.0, output=f"ValueError: {SURROGATE_MESSAGE}")],
                              exercises=[results.ExerciseOutcome("ex1", "graded", origin=os.fsdecode(b"\xdcbung/a.py"))])
    results.write_atomic(tmp_path / "r.json", outcome.to_json())
    back = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "\\xff\\xfe" in back["tests"][0]["output"]
    assert back["extra_data"]["exercises"][0]["origin"] == "\\xdcbung/a.py"


def test_ordinary_results_are_not_touched():
    data = results.Results(tests=[results.TestResult("ex1", "t", 1.0, output=ORDINARY)]).to_json()
    assert results.fit(json.loads(json.dumps(data))) == data


# --------------------------------------------------------------------------- worker replies, output

def test_worker_error_records_are_made_safe_and_capped_in_bytes():
    record = {"kind": "exception", "type": "Value\x1bError", "message": (SURROGATE_MESSAGE + UNSAFE_SPRAY + "😀") * 500,
              "where": [["/x/\udcff.py", 1, "f\x01", "raise ValueError('\u202e')"]]}
    clean = protocol.Reply.from_frame(json.loads(json.dumps({"error": record})), []).error
    frame = clean.where[0]
    for value in (clean.type, clean.message, frame.filename, frame.function, frame.source):
        _assert_safe(value)
    assert len(clean.message.encode("utf-8")) <= 4000


def test_decoded_strings_carry_no_lone_surrogates():
    value = wire.Decoder([]).decode(json.loads('{"L": ["\\udcff", "ok \\u00e9"]}'))
    assert value == ["\\xff", "ok é"]


def test_captured_output_escapes_undecodable_bytes():
    from autograder.sandbox.output import OutputCollector

    read, write = os.pipe()
    collector = OutputCollector(read, 100)
    collector.start()
    os.write(write, b"caf\xe9 \x1b[31mred\r\n" + b"\xff" * 200)
    os.close(write)
    collector.join(5)
    text = collector.text()
    _assert_safe(text)
    assert text.startswith("caf\\xe9 \\x1b[31mred\n") and "more bytes" in text


# --------------------------------------------------------------------------- intake

EX1 = contract.select("ex1")


def _utf8_flagged_zip(path: Path, name: bytes, text: str) -> None:
    """A zip whose member name claims to be UTF-8 (flag bit 11) but holds ``name``'s bytes."""
    placeholder = b"N" * len(name)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(placeholder.decode() + "/attention.py", text)
    data = bytearray(path.read_bytes().replace(placeholder, name))
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        struct.pack_into("<H", data, at + flag_at, struct.unpack_from("<H", data, at + flag_at)[0] | 0x800)
    path.write_bytes(bytes(data))


def test_intake_reads_folders_and_zip_members_named_with_invalid_bytes(tmp_path):
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/\xdcbung\x01"))
    folder.mkdir()
    (folder / "attention.py").write_text("x = 1\n")
    found = intake.collect(tmp_path, EX1).found["ex1"]
    assert found.kind == "found" and found.origin == "\\xdcbung\\x01/attention.py"
    _utf8_flagged_zip(tmp_path / "sub.zip", b"\xdcbung\xff", "y = 2\n")
    found = intake.collect(tmp_path / "sub.zip", EX1).found["ex1"]
    assert found.kind == "found" and found.source == "y = 2\n"
    _assert_safe(found.origin, lines=False)


def test_notebook_text_with_a_lone_surrogate_still_compiles(tmp_path):
    cell = {"cell_type": "code", "metadata": {}, "source": 'LABEL = "\ud800"\nx = 1\n'}
    (tmp_path / "attention.ipynb").write_text(json.dumps({"cells": [cell], "nbformat": 4}))
    found = intake.collect(tmp_path, EX1).found["ex1"]
    assert found.kind == "found"
    compile(found.source, "attention.py", "exec")


# --------------------------------------------------------------------------- through the CLI

def _grade(submission: Path, tmp: Path, *args: str) -> dict:
    out = tmp / "out" / "results.json"
    work = tmp / "cwd"
    work.mkdir(parents=True, exist_ok=True)
    proc = warm_cli.run([sys.executable, "-m", "autograder", "grade", os.fsdecode(submission), "--results",
                         str(out), "--worker-user", WORKER_USER, *args], cwd=work, env=grader_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert out.stat().st_size < 1_000_000
    data = json.loads(out.read_bytes().decode("utf-8"))        # strict: valid UTF-8
    results.validate(data)
    return data


RAISER = '''
import os


def _boom(*args, **kwargs):
    raise ValueError(@MESSAGE@)


def __getattr__(name):
    return _boom
'''


@root_only
def test_cli_lone_surrogate_message_costs_only_its_exercise(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "attention.py").write_text(RAISER.replace("@MESSAGE@", "os.fsdecode(b'weights_\\xff\\xfe.npy')"))
    (sub / "visualize.py").write_text(solution("ex2"))
    data = _grade(sub, tmp_path, "--exercises", "ex1,ex2")
    totals = results.totals_by_exercise(data["tests"])
    assert totals["ex2"] == (contract.BY_ID["ex2"].points,) * 2
    assert totals["ex1"][0] == 0
    assert any("weights_\\xff\\xfe.npy" in t["output"] for t in data["tests"])


@root_only
def test_cli_u0001_messages_in_every_test_stay_under_a_megabyte(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    for ex in contract.EXERCISES:
        (sub / ex.filename).write_text(RAISER.replace("@MESSAGE@", "'\\x01' * 200_000"))
    data = _grade(sub, tmp_path)
    assert len(data["tests"]) > 100
    verdicts = [t["output"].split("\n")[0] for t in data["tests"] if t["status"] == "failed"]
    assert all(verdicts) and sum("raised ValueError: \\x01" in v for v in verdicts) > 100


@root_only
def test_cli_correct_files_in_a_folder_named_with_invalid_bytes_get_full_marks(tmp_path):
    """The observed case: five correct files under a cp1252 "Übung" unpacked as bytes."""
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/sub/\xdcbung"))
    folder.mkdir(parents=True)
    for ex in contract.DEFAULT:                                   # grade's default assignment
        (folder / ex.filename).write_text(solution(ex.id))
    data = _grade(tmp_path / "sub", tmp_path)
    assert data["score"] == sum(ex.points for ex in contract.DEFAULT)
    assert {o["origin"].split("/")[0] for o in data["extra_data"]["exercises"]} == {"\\xdcbung"}


@root_only
def test_cli_correct_file_in_a_zip_member_named_with_invalid_bytes_gets_full_marks(tmp_path):
    _utf8_flagged_zip(tmp_path / "sub.zip", b"\xdcbung\x1b\xff", solution("ex1"))
    data = _grade(tmp_path / "sub.zip", tmp_path, "--exercises", "ex1")
    assert data["score"] == contract.BY_ID["ex1"].points
