"""``python -m autograder audit``: its report, checked cell by cell against independent gradings.

The audit runs as course staff run it: the real CLI in a subprocess, from an odd working
folder (spaces, non-ASCII, relative ``--out`` and ``--extra``). The independent side is the
kit's own test machinery: each case's files built here (from ``solutions/``, ``tests/mutants.py``,
the corpora on disk, or by editing the solution's text in this file) and graded by the
``gradings`` fixture (``tests/gradings.py``: the same cases the corpus tests grade, graded
once per run). Every cell of the report (each case under each secret, each test's verdict,
score and message) must equal that grading, and every table (kills, survivors, idle tests,
false failures, stub passes, missed ``# expect-fail:`` tests, verdicts that change with the
secret) must be what those gradings imply, and so must the exit code.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder import contract, results
from autograder.audit import model, tables
from autograder.audit.cases import Case, CaseKind
from autograder.packaging.release.markers import strip_solutions
from helpers import ROOT, SUBMISSIONS, grader_env
import warm_cli
from mutants import as_submitted, expected_failures, make_patch, mutant_source
from student_corpus_cases import folders

AUDIT_TIMEOUT_S = 3600
MESSAGE_LIMIT = 2000


# --------------------------------------------------------------------------- the independent side

@dataclass
class Expected:
    """A case as this test builds it: its files, the exercises it is graded on, its kind and,
    for a mutant, the words of the tests it must fail."""
    files: dict[str, bytes | str]
    exercises: tuple[str, ...]
    kind: str
    expected: list[str] = field(default_factory=list)


def solution_text(ex: contract.Exercise) -> str:
    return (ROOT / "solutions" / ex.folder / ex.filename).read_text(encoding="utf-8")


def kit_cases(ids: tuple[str, ...]) -> dict[str, Expected]:
    """What the kit holds for exercises ``ids``, labelled as the report labels cases."""
    out: dict[str, Expected] = {}
    for ex in contract.select(list(ids)):
        text, name = solution_text(ex), ex.filename
        out[f"{ex.id}/solution"] = Expected({name: as_submitted(text)}, (ex.id,), "solution")
        out[f"{ex.id}/stub"] = Expected({name: strip_solutions(text, name).text}, (ex.id,), "stub")
        for path in sorted((SUBMISSIONS / ex.id / "mutants").glob("*.diff")):
            out[f"{ex.id}/mutant/{path.stem}"] = Expected({name: mutant_source(path)}, (ex.id,), "mutant",
                                                          expected_failures(path))
        for path in sorted((SUBMISSIONS / ex.id / "alternatives").glob("*.py")):
            out[f"{ex.id}/alternative/{path.stem}"] = Expected({name: path.read_bytes()}, (ex.id,), "alternative")
    for folder in folders("correct"):
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                 if p.is_file() and "__pycache__" not in p.parts}
        out[f"student/correct_set/{folder.name}"] = Expected(files, ids, "correct_set")
    return out


def graded_independently(gradings, cases: dict[str, Expected], secret: str | None = None) -> dict[str, results.Results]:
    return {label: gradings.grade(case.files, ",".join(case.exercises), secret) for label, case in cases.items()}


def same_message(audit: str, independent: str) -> bool:
    """The audit's failure message is the independent grading's. The independent gradings
    run inside this pytest process, whose assertion rewriting (an import hook for every
    ``test_*.py``) also rewrites the suites' bare ``assert``s and appends its explanation
    (``\nassert (3, 2) == (2, 3)…``) to their messages; the audit's grading processes, like
    ``grade``, run the suites with ``--assert=plain``: the message alone."""
    return audit == independent[:MESSAGE_LIMIT] or (
        bool(audit) and independent.startswith(audit + "\nassert ") and len(audit) < MESSAGE_LIMIT)


def lost(outcome: results.Results, exercise: str) -> bool:
    return any(not t.passed for t in outcome.tests if t.exercise == exercise)


def failed_names(outcome: results.Results, exercise: str) -> list[str]:
    return [t.name for t in outcome.tests if t.exercise == exercise and not t.passed]


# --------------------------------------------------------------------------- the audit, as staff run it

@dataclass
class AuditRun:
    returncode: int
    stdout: str
    stderr: str
    report: dict
    markdown: str

    def exercise(self, ex_id: str) -> dict:
        return next(e for e in self.report["exercises"] if e["exercise"] == ex_id)

    def gradings(self, secret: str) -> dict[str, dict]:
        return {g["case"]: g for g in self.report["gradings"] if g["secret"] == secret}


def odd_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "staff room ☕ (audit)"
    folder.mkdir()
    return folder


def run_audit(cwd: Path, *args: str) -> AuditRun:
    """``python -m autograder audit … --out report`` from ``cwd``; the report read back from
    ``cwd/report`` (a relative --out lands in the working folder)."""
    proc = warm_cli.run([sys.executable, "-m", "autograder", "audit", *args, "--out", "report"],
                        cwd=cwd, env=grader_env(), text=True, timeout=AUDIT_TIMEOUT_S)
    out = cwd / "report"
    assert (out / "audit.json").is_file(), proc.stdout[-3000:] + proc.stderr[-5000:]
    return AuditRun(proc.returncode, proc.stdout, proc.stderr,
                    json.loads((out / "audit.json").read_text(encoding="utf-8")),
                    (out / "audit.md").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- cell by cell

def check_cells(run: AuditRun, secret_label: str, mine: dict[str, results.Results]) -> None:
    """Each case's grading in the report equals the independent one: same tests, verdicts,
    scores, failure messages; every test timed."""
    theirs = run.gradings(secret_label)
    assert set(theirs) == set(mine), (sorted(set(theirs) ^ set(mine)))
    for label, outcome in mine.items():
        row = theirs[label]
        assert not row["error"], (label, row["error"])
        assert (row["score"], row["max_score"]) == (outcome.score, outcome.max_score), label
        got = {t["name"]: (t["passed"], t["max_score"]) for t in row["tests"]}
        want = {t.name: (t.passed, t.max_score) for t in outcome.tests}
        assert got == want, (label, {n: (got.get(n), want.get(n)) for n in set(got) | set(want) if got.get(n) != want.get(n)})
        messages = {t["name"]: t["message"] for t in row["tests"]}
        wrong = {t.name: (messages[t.name], t.output) for t in outcome.tests
                 if not (messages[t.name] == "" if t.passed else same_message(messages[t.name], t.output))}
        assert not wrong, (label, wrong)
        assert all(t["seconds"] > 0 for t in row["tests"]), f"{label}: a test without its time"
        assert sum(t["seconds"] for t in row["tests"]) <= row["seconds"] + 1e-6, label


def check_tables(run: AuditRun, cases: dict[str, Expected], graded: dict[str, dict[str, results.Results]],
                 ids: tuple[str, ...]) -> None:
    """Every table of every exercise is what the independent gradings (``graded``: secret
    label -> case -> results) imply."""
    secrets = list(graded)
    for ex_id in ids:
        found = run.exercise(ex_id)
        mine = {label: c for label, c in cases.items() if ex_id in c.exercises}
        mutants = [label for label, c in mine.items() if c.kind == "mutant"]
        killed = {label: [s for s in secrets if lost(graded[s][label], ex_id)] for label in mutants}
        assert set(found["survivors"]) == {m for m in mutants if not killed[m]}, ex_id
        assert set(found["secret_dependent"]) == {m for m in mutants if 0 < len(killed[m]) < len(secrets)}, ex_id
        assert {m["case"]: m["killed_under"] for m in found["mutants"]} == killed, ex_id

        names = [t.name for t in graded[secrets[0]][next(iter(mine))].tests if t.exercise == ex_id]
        kills = {n: sorted(m for m in mutants if any(n in failed_names(graded[s][m], ex_id) for s in secrets))
                 for n in names}
        assert {t["name"]: sorted(t["kills"]) for t in found["tests"]} == kills, ex_id
        assert set(found["idle_tests"]) == {n for n, k in kills.items() if not k}, ex_id

        false = {(label, t.name, s): t.output for s in secrets for label, c in mine.items()
                 if c.kind in ("solution", "alternative", "correct_set")
                 for t in graded[s][label].tests if t.exercise == ex_id and not t.passed}
        reported = {(f["case"], f["test"], f["secret"]): f["message"] for f in found["false_failures"]}
        assert set(reported) == set(false), ex_id
        assert all(same_message(reported[k], false[k]) for k in false), ex_id
        stub_passes = {(t.name, s) for s in secrets for label, c in mine.items() if c.kind == "stub"
                       for t in graded[s][label].tests if t.exercise == ex_id and t.passed}
        assert {(p["test"], p["secret"]) for p in found["stub_passes"]} == stub_passes, ex_id
        missed = {(m, s) for m in mutants for s in secrets if lost(graded[s][m], ex_id)
                  and any(not any(w in n for n in failed_names(graded[s][m], ex_id)) for w in mine[m].expected)}
        assert {(m["mutant"], m["secret"]) for m in found["missed"]} == missed, ex_id
        varying = {(label, t.name) for label in mine for t in graded[secrets[0]][label].tests if t.exercise == ex_id
                   if len({next(u.passed for u in graded[s][label].tests if u.name == t.name) for s in secrets}) > 1}
        assert {(v["case"], v["test"]) for v in found["varying"]} == varying, ex_id
        runs = {t["name"]: t["runs"] for t in found["tests"]}
        assert set(runs.values()) == {len(mine) * len(secrets)}, (ex_id, runs)
        for t in found["tests"]:
            total = sum(v["seconds"] for g in run.report["gradings"] for v in g["tests"] if v["name"] == t["name"])
            assert t["seconds"] == pytest.approx(total, abs=0.01), t["name"]


def problems_expected(run: AuditRun) -> bool:
    """Whether the tables hold anything that must fail the audit."""
    return any(e["survivors"] or e["secret_dependent"] or e["missed"] or e["false_failures"] or e["stub_passes"]
               for e in run.report["exercises"])


# ex1 (NumPy) and ex3 (a torch module): the two cheapest to grade of the kinds; ex2's cases are
# the costliest (matplotlib draws, ~5 times ex3's), and its audit is the next two tests'.
EXERCISES = ("ex1", "ex3")


def test_audit_reproduces_the_corpus_gradings_cell_by_cell(tmp_path, gradings):
    """On the kit's own corpus of two exercises (solutions, stubs, every mutant, every
    alternative, the student corpus's correct sets) under the checkout's secret: the report
    is the independent gradings, cell by cell and table by table, and the exit code says
    whether any false failure, survivor, missed expectation or stub pass exists."""
    run = run_audit(odd_folder(tmp_path), "--exercises", ",".join(EXERCISES), "--jobs", "2")
    cases = kit_cases(EXERCISES)
    assert {c["label"] for c in run.report["cases"]} == set(cases)
    assert [s["label"] for s in run.report["secrets"]] == ["checkout"]
    mine = graded_independently(gradings, cases)
    check_cells(run, "checkout", mine)
    check_tables(run, cases, {"checkout": mine}, EXERCISES)
    assert run.returncode == (1 if problems_expected(run) else 0), run.stdout[-3000:]
    assert run.report["ok"] is (run.returncode == 0)
    for ex_id in EXERCISES:
        assert f"## {ex_id}" in run.markdown
    assert run.report["wall_seconds"] > 0 and "wall time" in run.markdown


# --------------------------------------------------------------------------- an instructor's own cases

def _ex2_source() -> str:
    return as_submitted(solution_text(contract.BY_ID["ex2"]))


def _edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the solution changed: {old!r} is no longer there once"
    return source.replace(old, new)


SORT = '        order = np.argsort(-row, kind="stable")[:k]\n'
COMMENT = "        # A stable sort of -row keeps equal weights in key order: ties -> lower index.\n"
IMSHOW = '    image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")\n'


def extra_cases() -> dict[str, tuple[str, str, str]]:
    """``extra/ex2/<kind>/<name>`` -> (what it is, its source, the first header line)."""
    base = _ex2_source()
    return {
        # Only a comment changes: no test can catch it (an honest survivor).
        "extra/ex2/mutant/comment_only": ("mutant", _edit(base, COMMENT, "        # Largest first.\n"),
                                          "# expect-fail: top_attended"),
        # A wrong branch for inputs the contract never allows ((n, m) only): dead code.
        "extra/ex2/mutant/dead_branch": ("mutant", _edit(base, SORT, SORT.replace(
            "        order", "        if row.ndim > 1:\n            return []\n        order")),
            "# expect-fail: top_attended"),
        # A real bug in plot_attention, but its header names top_attended: a missed expectation.
        "extra/ex2/mutant/names_the_wrong_test": ("mutant", _edit(base, IMSHOW, IMSHOW.replace("(weights,", "(weights.T,")),
                                                  "# expect-fail: top_attended"),
        # Sold as a correct style, but ties go to the HIGHER key index: a false failure.
        "extra/ex2/alternative/ties_to_the_higher_index": ("alternative", _edit(base, SORT, SORT.replace(
            'np.argsort(-row, kind="stable")', '(len(row) - 1 - np.argsort(-row[::-1], kind="stable"))')), ""),
    }


def write_extra(folder: Path, cases: dict[str, tuple[str, str, str]]) -> None:
    """The cases in ``--extra``'s layout: mutants as patches of the solution, alternatives whole."""
    base = _ex2_source()
    for label, (kind, source, first_line) in cases.items():
        _, ex_id, _, name = label.split("/")
        target = folder / ex_id / ("mutants" if kind == "mutant" else "alternatives")
        target.mkdir(parents=True, exist_ok=True)
        if kind == "mutant":
            (target / f"{name}.diff").write_text(make_patch(base, source, [first_line, f"# mutant: {name}"]),
                                                 encoding="utf-8")
        else:
            (target / f"{name}.py").write_text(source, encoding="utf-8")


def test_extra_folder_survivors_missed_test_and_false_failure(tmp_path, gradings):
    """An instructor's folder (``--extra``, relative to the working folder, alone with
    ``--extra-only``): the comment-only and dead-branch mutants survive, the mutant that
    breaks another function misses its ``# expect-fail:`` test, the wrong "alternative" is a
    false failure with its tests and messages; exit code 1; the markdown names them all."""
    cwd = odd_folder(tmp_path)
    defined = extra_cases()
    write_extra(cwd / "my cases", defined)
    run = run_audit(cwd, "--exercises", "ex2", "--extra", "my cases", "--extra-only", "--jobs", "2")
    cases = {label: Expected({"visualize.py": source}, ("ex2",), kind, [first.removeprefix("# expect-fail:").strip()]
                             if first else [])
             for label, (kind, source, first) in defined.items()}
    assert {c["label"] for c in run.report["cases"]} == set(cases)       # the kit's corpus left out
    mine = graded_independently(gradings, cases)
    check_cells(run, "checkout", mine)
    check_tables(run, cases, {"checkout": mine}, ("ex2",))

    found = run.exercise("ex2")
    assert set(found["survivors"]) == {"extra/ex2/mutant/comment_only", "extra/ex2/mutant/dead_branch"}
    assert [m["mutant"] for m in found["missed"]] == ["extra/ex2/mutant/names_the_wrong_test"]
    false = [f for f in found["false_failures"] if f["case"] == "extra/ex2/alternative/ties_to_the_higher_index"]
    assert false and all(f["message"] for f in false), found["false_failures"]
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.report["ok"] is False
    for f in false:                                   # the markdown shows test and message on one line
        assert " ".join(f["test"].split()) in run.markdown
        assert " ".join(f["message"].split())[:60].replace("|", "\\|") in run.markdown
    assert "comment_only" in run.markdown and "dead_branch" in run.markdown and "names_the_wrong_test" in run.markdown


# --------------------------------------------------------------------------- verdicts that change with the secret

# top_attended ranks the weights rounded to 2 decimals (as a notebook prints them): two keys
# whose weights agree to 2 decimals are then listed by index, not by weight. Whether a hidden
# test's random weights (drawn from the secret, autograder/seeds.py) hold such a pair decides
# whether the grading catches it: about one secret in three does (a NumPy simulation of the
# three tests that draw random weights for top_attended: 36 % of 4,000 draws).
ROUNDED = SORT.replace("np.argsort(-row,", "np.argsort(-np.round(row, 2),")
CANDIDATES = [hashlib.sha256(f"audit test secret {i}".encode()).hexdigest() for i in range(16)]


def test_a_verdict_that_changes_with_the_secret_is_reported(tmp_path, gradings):
    """A bug that only some secrets' hidden inputs reveal: graded independently under
    candidate secrets until one catches it and one does not, then audited under exactly those
    two (``--secret``): the report says it is caught under one and survives under the other,
    lists the tests whose verdict changes, and fails (exit code 1)."""
    source = _edit(_ex2_source(), SORT, ROUNDED)
    files = {"visualize.py": source}
    caught, missed = None, None
    for secret in CANDIDATES:
        outcome = gradings.grade(files, "ex2", secret)
        if lost(outcome, "ex2"):
            caught = caught or secret
        else:
            missed = missed or secret
        if caught and missed:
            break
    assert caught and missed, ("under none of the candidate secrets does the rounding bug both show and hide; "
                               f"caught under {caught}, missed under {missed}")
    cwd = odd_folder(tmp_path)
    label = "extra/ex2/mutant/rounds_before_ranking"
    write_extra(cwd / "extra", {label: ("mutant", source, "# expect-fail: top_attended")})
    run = run_audit(cwd, "--exercises", "ex2", "--extra", "extra", "--extra-only",
                    "--secret", caught, "--secret", missed, "--jobs", "2")
    assert [s["label"] for s in run.report["secrets"]] == ["pinned-1", "pinned-2"]
    assert [s["fingerprint"] for s in run.report["secrets"]] == [model.fingerprint(caught), model.fingerprint(missed)]
    cases = {label: Expected(files, ("ex2",), "mutant", ["top_attended"])}
    graded = {"pinned-1": {label: gradings.grade(files, "ex2", caught)},
              "pinned-2": {label: gradings.grade(files, "ex2", missed)}}
    for secret, mine in graded.items():
        check_cells(run, secret, mine)
    check_tables(run, cases, graded, ("ex2",))
    found = run.exercise("ex2")
    assert found["secret_dependent"] == [label] and found["survivors"] == []
    assert found["mutants"][0]["killed_under"] == ["pinned-1"] and found["mutants"][0]["survived_under"] == ["pinned-2"]
    assert found["varying"] and all(v["failed_under"] == ["pinned-1"] for v in found["varying"])
    assert run.returncode == 1 and any(f"{label} survives under pinned-2" in p for p in run.report["problems"])
    assert f"{label} (killed under pinned-1; survives under pinned-2)" in run.markdown


# --------------------------------------------------------------------------- the findings, on made-up gradings

def _grading(case: str, secret: str, verdicts: dict[str, bool], error: str = "") -> model.Grading:
    tests = [model.TestVerdict("ex9", f"9.{i}", name, ok, 1.0, 0.5, "" if ok else f"{name} failed")
             for i, (name, ok) in enumerate(verdicts.items(), 1)]
    return model.Grading(case, secret, score=sum(verdicts.values()), max_score=len(verdicts), seconds=2.0,
                         tests=[] if error else tests, error=error)


def _case(kind: CaseKind, name: str, expected: tuple[str, ...] = ()) -> Case:
    return Case(kind, name, ("ex9",), {}, expected=expected)


def test_findings_follow_their_definitions():
    """Kills, survivors (also under one secret only), missed expectations, false failures,
    stub passes, varying verdicts, idle tests and times, from gradings made up here."""
    sol, stub = _case(CaseKind.SOLUTION, "solution"), _case(CaseKind.STUB, "stub")
    caught, never, sometimes = (_case(CaseKind.MUTANT, n, ("a",)) for n in ("caught", "never", "sometimes"))
    elsewhere = _case(CaseKind.MUTANT, "elsewhere", ("a",))
    alt = _case(CaseKind.ALTERNATIVE, "alt")
    secrets = [model.SecretChoice("s1", "11" * 16, "x"), model.SecretChoice("s2", "22" * 16, "y")]
    g = []
    for s in ("s1", "s2"):
        g += [_grading(sol.label, s, {"a": True, "b": True, "c": True}),
              _grading(stub.label, s, {"a": False, "b": s == "s2", "c": False}),
              _grading(caught.label, s, {"a": False, "b": True, "c": True}),
              _grading(never.label, s, {"a": True, "b": True, "c": True}),
              _grading(sometimes.label, s, {"a": s == "s2", "b": True, "c": True}),
              _grading(elsewhere.label, s, {"a": True, "b": False, "c": True}),
              _grading(alt.label, s, {"a": True, "b": True, "c": s == "s1"})]
    found = tables.exercise_findings("ex9", [sol, stub, caught, never, sometimes, elsewhere, alt], g, secrets)
    assert found.survivors == [never.label]
    assert [m.case for m in found.secret_dependent] == [sometimes.label]
    assert [(m.mutant, m.secret) for m in found.missed] == [(elsewhere.label, "s1"), (elsewhere.label, "s2")]
    assert [(f.case, f.test, f.secret, f.message) for f in found.false_failures] == [(alt.label, "c", "s2", "c failed")]
    assert [(p.test, p.secret) for p in found.stub_passes] == [("b", "s2")]
    assert {(v.case, v.test) for v in found.varying} == {(stub.label, "b"), (sometimes.label, "a"), (alt.label, "c")}
    rows = {t.name: t for t in found.tests}
    assert sorted(rows["a"].kills) == sorted([caught.label, sometimes.label]) and rows["c"].kills == []
    assert found.idle_tests == ["c"]
    assert rows["a"].runs == 14 and rows["a"].seconds == pytest.approx(7.0)
    assert len(found.problems()) == 1 + 1 + 2 + 1 + 1


def test_a_case_that_could_not_be_graded_fails_the_audit():
    from autograder.audit import report
    sol = _case(CaseKind.SOLUTION, "solution")
    secrets = [model.SecretChoice("s1", None, "x")]
    g = [_grading(sol.label, "s1", {}, error="RuntimeError: the hidden test suites could not run")]
    audit = report.Audit([tables.exercise_findings("ex9", [sol], g, secrets)], [sol], secrets, g, 1, 1.0)
    assert audit.exit_code == 1 and "could not grade ex9/solution" in audit.problems()[0]
    assert "could not finish" in report.markdown(audit)
    clean = report.Audit([tables.exercise_findings("ex9", [sol], [_grading(sol.label, "s1", {"a": True})], secrets)],
                         [sol], secrets, [_grading(sol.label, "s1", {"a": True})], 1, 1.0)
    assert clean.exit_code == 0 and clean.to_json()["ok"] is True


def test_secrets_the_audit_grades_under():
    chosen = model.choose_secrets(3, [])
    assert [s.label for s in chosen] == ["checkout", "sweep-100", "sweep-101"]
    assert chosen[0].value is None and chosen[1].value == model.sweep_secret(100)
    pinned = model.choose_secrets(5, ["ab" * 16, "CD" * 16])
    assert [(s.label, s.value) for s in pinned] == [("pinned-1", "ab" * 16), ("pinned-2", "cd" * 16)]
    for bad in (["ab" * 16, "AB" * 16], ["zz"], ["ab"]):
        with pytest.raises(ValueError):
            model.choose_secrets(1, bad)
    with pytest.raises(ValueError):
        model.choose_secrets(0, [])


def test_bad_arguments_and_folders_stop_before_grading(tmp_path):
    """Exit code 2, a reason on stderr, and no report, for a folder that is not in --extra's
    layout, --extra-only without --extra, or an unknown exercise."""
    (tmp_path / "mine" / "ex2" / "mutant").mkdir(parents=True)           # "mutant", not "mutants"
    (tmp_path / "typo" / "ex02").mkdir(parents=True)
    for args, words in ((["--extra", "mine"], "unexpected mutant"), (["--extra", "typo"], "not an exercise folder"),
                        (["--extra-only"], "--extra-only needs --extra"), (["--exercises", "ex42"], "unknown exercise")):
        proc = subprocess.run([sys.executable, "-m", "autograder", "audit", *args, "--out", "report"], cwd=tmp_path,
                              env=grader_env(), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)
        assert not (tmp_path / "report").exists()


def test_help_states_the_exit_code_and_the_extra_layout():
    proc = subprocess.run([sys.executable, "-m", "autograder", "audit", "--help"], cwd=ROOT, env=grader_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "exit code" in proc.stdout and "FOLDER/<ex id>/mutants/<case>.diff" in proc.stdout
