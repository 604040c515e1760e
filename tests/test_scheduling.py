"""The order ``make test`` hands its units out in (scheduling.py): longest first, from a record."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import scheduling
from scheduling import Durations, Recorder, longest_first

# two ordinary files, one spread file (test_hostile.py), in collection order
COLLECTED = ["tests/test_a.py::test_1", "tests/test_a.py::test_2",
             "tests/test_hostile.py::test_case[quick]", "tests/test_hostile.py::test_case[hang]",
             "tests/test_hostile.py::test_case[other]",
             "tests/test_b.py::test_1", "tests/test_b.py::test_2", "tests/test_b.py::test_3"]
RECORD = Durations(files={"test_a.py": 10.0, "test_hostile.py": 30.0, "test_b.py": 40.0},
                   outliers={"tests/test_hostile.py::test_case[hang]": 24.0})


def _units_in_order(nodeids: list[str]) -> list[str]:
    units: list[str] = []
    for nodeid in nodeids:
        unit = scheduling.unit_of(nodeid)
        if not units or units[-1] != unit:
            units.append(unit)
    return units


def test_units_are_files_except_spread_files_whose_tests_are_units_of_their_own():
    assert scheduling.unit_of("tests/test_b.py::test_2") == "tests/test_b.py"
    assert scheduling.unit_of("tests/test_hostile.py::test_case[hang]") == "tests/test_hostile.py::test_case[hang]"


def test_the_longest_unit_goes_first_and_each_file_stays_whole_and_in_order():
    ordered = longest_first(COLLECTED, RECORD)
    # b (40 s), the hanging case (24 s), a (10 s), the two other cases (3 s each: 30 - 24 shared)
    assert _units_in_order(ordered) == ["tests/test_b.py", "tests/test_hostile.py::test_case[hang]", "tests/test_a.py",
                                        "tests/test_hostile.py::test_case[quick]",
                                        "tests/test_hostile.py::test_case[other]"]
    assert [n for n in ordered if "test_b.py" in n] == [n for n in COLLECTED if "test_b.py" in n]
    assert sorted(ordered) == sorted(COLLECTED)


def test_a_file_without_a_record_goes_first_and_without_any_record_the_order_is_kept():
    new = ["tests/test_new.py::test_1"]
    assert longest_first(COLLECTED + new, RECORD)[0] == new[0]
    assert longest_first(COLLECTED, Durations.load(Path("/nonexistent/durations.json"))) == COLLECTED


def test_the_recorder_sums_a_tests_phases_per_file_and_keeps_slow_spread_tests(tmp_path):
    recorder = Recorder(tmp_path / "durations.json")
    phases = [("tests/test_a.py::test_1", 0.5), ("tests/test_a.py::test_1", 2.0), ("tests/test_a.py::test_2", 7.5),
              ("tests/test_hostile.py::test_case[hang]", 20.0), ("tests/test_hostile.py::test_case[hang]", 4.0),
              ("tests/test_hostile.py::test_case[quick]", 1.0)]
    for nodeid, seconds in phases:                     # setup, call, teardown reports alike
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))
    recorder.write()
    written = json.loads((tmp_path / "durations.json").read_text(encoding="utf-8"))
    # test_a.py's 7.5 s test is not kept on its own: that file is one unit anyway
    assert written == {"files": {"test_a.py": 10.0, "test_hostile.py": 25.0},
                       "outliers": {"tests/test_hostile.py::test_case[hang]": 24.0}}
    assert Durations.load(tmp_path / "durations.json") == Durations(written["files"], written["outliers"])

