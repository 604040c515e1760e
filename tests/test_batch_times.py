"""``batch --import-timeout/--budget/--exercise-budget``: `grade`'s time limits, handed to every
grader of the class, checked before anything is graded, and part of what a kept result must
have been graded with (a batch run again with other limits grades again). An exercise id the
kit does not know, in ``--budget`` or ``--exercises``, stops ``grade`` and ``batch`` with a
sentence."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from autograder import contract, results
from autograder.batch import add_arguments, command
from autograder.batching.cluster import ClusterPool
from autograder.batching.runner import GradeTimes, Runner
from autograder.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "ex1_attention" / "attention.py"
EX1 = contract.select("ex1")


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["class", *argv])


def test_the_limits_reach_the_graders_command_line_as_grade_takes_them(tmp_path):
    times = GradeTimes.from_args(_args("--import-timeout", "7.5", "--budget", "ex5=120,ex2=30",
                                       "--exercise-budget", "40"))
    assert times == GradeTimes(7.5, (("ex5", 120.0), ("ex2", 30.0)), 40.0)
    runner = Runner(tmp_path / "out", EX1, times=times)
    try:
        cmd = runner.command(tmp_path / "job.json", "ag-someone")
        tail = cmd[cmd.index("--import-timeout"):]
        assert tail[:6] == ["--import-timeout", "7.5", "--budget", "ex5=120.0,ex2=30.0", "--exercise-budget", "40.0"]
        # and `grade` reads them back as given
        from autograder.cli import build_parser
        parsed = build_parser("grade").parse_args(cmd[3:])
        assert (parsed.import_timeout, parsed.budget, parsed.exercise_budget) == (7.5, "ex5=120.0,ex2=30.0", 40.0)
    finally:
        runner.close()


def test_no_limits_given_adds_nothing_and_keeps_earlier_results(tmp_path):
    """Without the options, neither the graders' command line nor the resume key changes
    (results graded before these options existed stay kept)."""
    times = GradeTimes.from_args(_args())
    assert times == GradeTimes() and times.argv() == [] and times.settings() == {}
    runner = Runner(tmp_path / "out", EX1)
    try:
        assert "--budget" not in runner.command(tmp_path / "job.json", "ag-someone")
    finally:
        runner.close()


def test_a_cluster_worker_rebuilds_the_same_limits(tmp_path):
    times = GradeTimes(3.0, (("ex1", 9.0),), 11.0)
    runner = Runner(tmp_path / "out", EX1, times=times)
    try:
        settings = json.loads(json.dumps(ClusterPool(runner, None, True, "ag-x").settings))   # as sent
        assert GradeTimes.from_settings(settings["times"]) == times
    finally:
        runner.close()


@pytest.mark.parametrize("argv, says", [
    (("--budget", "ex99=10"), "unknown exercise 'ex99'"),
    (("--budget", "ex1:10"), "expected EXERCISE=SECONDS"),
    (("--budget", "ex1=-3"), "expected EXERCISE=SECONDS"),
    (("--budget", "ex1=inf"), "expected EXERCISE=SECONDS"),
    (("--exercise-budget", "0"), "expected a positive number of seconds, got '0'"),
    (("--import-timeout", "nan"), "expected a positive number of seconds, got 'nan'"),
    (("--timeout", "-1"), "expected a positive number of seconds, got '-1'"),
    (("--student-timeout", "0"), "expected a positive number of seconds, got '0'"),
    (("--jobs", "0"), "expected a whole number above 0, got '0'"),
    (("--job-memory-mb", "-1"), "expected a whole number above 0, got '-1'"),
    (("--exercises", "ex1,ex99"), "unknown exercise id(s): ex99"),
])
def test_bad_options_stop_the_batch_before_anything_is_graded(tmp_path, capsys, argv, says):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    out = tmp_path / "marks" / "grades.csv"
    try:
        code = main(["batch", str(tmp_path / "class"), "--out", str(out), "--no-progress", *argv])
    except SystemExit as exc:                                # argparse: exit code 2 and its message
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not out.exists() and not (out.parent / "results").exists()


@pytest.mark.parametrize("argv, says", [(("--budget", "ex1=5,exx=4"), "unknown exercise 'exx'"),
                                         (("--exercises", "exx"), "unknown exercise id(s): exx"),
                                         (("--timeout", "0"), "expected a positive number of seconds"),
                                         (("--exercise-budget", "-2"), "expected a positive number of seconds"),
                                         (("--memory-mb", "-5"), "expected a whole number above 0")])
def test_grade_refuses_bad_limits_and_unknown_exercises_in_a_sentence(tmp_path, capsys, argv, says):
    """Exit code 2 and a sentence on stderr (not a traceback), and no results file."""
    try:
        code = main(["grade", str(tmp_path), "--results", str(tmp_path / "results.json"), *argv])
    except SystemExit as exc:                                # argparse: exit code 2 and its message
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "results.json").exists()


def test_the_graders_apply_the_limits_and_a_new_limit_grades_again(world_readable_folder):
    """A file whose import takes 3 s: with ``--import-timeout 1`` its import is stopped (an
    import error, saying the limit);
    the same batch run again without it grades it again (the kept result was made with another
    limit) and gives full marks."""
    student = world_readable_folder / "class" / "slow_import"
    student.mkdir(parents=True)
    (student / "attention.py").write_text(SOLUTION.read_text(encoding="utf-8") + "\nimport time\ntime.sleep(3)\n",
                                          encoding="utf-8")
    out = world_readable_folder / "marks" / "grades.csv"
    base = ["batch", str(student.parent), "--out", str(out), "--exercises", "ex1", "--jobs", "1", "--no-progress"]

    assert main([*base, "--import-timeout", "1"]) == 0
    first = results.outcomes_from_json(results.load(out.parent / "results" / "slow_import" / "results.json"))["ex1"]
    assert first.status is results.ExerciseStatus.IMPORT_ERROR and first.score == 0
    assert "within 1 s" in first.message                     # this limit, not the default 20 s

    assert main(base) == 0
    again = results.outcomes_from_json(results.load(out.parent / "results" / "slow_import" / "results.json"))["ex1"]
    assert again.status is results.ExerciseStatus.GRADED and again.score == again.max_score == 20


def test_grade_of_a_path_that_does_not_exist_says_so_and_still_writes_results(tmp_path, capsys):
    """A mistyped path is graded as a submission without files (Gradescope must always get a
    results.json), and ``grade`` says on stderr that the path does not exist."""
    out = tmp_path / "results.json"
    assert main(["grade", str(tmp_path / "no-such-folder"), "--exercises", "ex1", "--results", str(out)]) == 0
    assert "no-such-folder does not exist" in capsys.readouterr().err
    data = results.load(out)
    assert data["score"] == 0 and results.outcomes_from_json(data)["ex1"].status is results.ExerciseStatus.MISSING

