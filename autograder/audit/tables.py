"""The audit's findings, computed from the gradings: per exercise, per test, per mutant.

Definitions (each case graded once per secret; a test's verdict is pass or fail):

* a mutant is **killed** under a secret when any test of its exercise fails; a **survivor**
  is killed under no secret; **caught under some secrets only**: killed under some, not all;
* a mutant **misses an expectation** when it is killed but no failing test's name contains
  one of its ``# expect-fail:`` words (what ``tests/test_suites_corpus.py`` asserts);
* a **false failure**: a test that correct code (the solution, an alternative, a correct
  set) fails, with its message;
* a **stub pass**: a test the stub passes (a stub must get zero);
* a **varying verdict**: a (case, test) whose pass/fail differs between secrets;
* an **idle test**: a test no mutant fails under any secret;
* a test's **seconds**: its wall time summed over every grading that ran it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.audit.cases import Case, CaseKind
from autograder.audit.model import Grading, SecretChoice


@dataclass
class FalseFailure:
    case: str
    test: str
    secret: str
    message: str


@dataclass
class StubPass:
    test: str
    secret: str


@dataclass
class MissedExpectation:
    """Under ``secret`` the mutant lost points, but no failing test matches ``words``."""
    mutant: str
    secret: str
    words: list[str]
    failed: list[str]


@dataclass
class VaryingVerdict:
    case: str
    test: str
    failed_under: list[str]
    passed_under: list[str]


@dataclass
class MutantRow:
    case: str
    expected: list[str]
    killed_under: list[str]
    survived_under: list[str]
    failed_tests: list[str]              # failed under at least one secret

    @property
    def survivor(self) -> bool:
        return not self.killed_under

    @property
    def secret_dependent(self) -> bool:
        return bool(self.killed_under) and bool(self.survived_under)


@dataclass
class TestRow:
    number: str
    name: str
    max_score: float
    kills: list[str] = field(default_factory=list)          # mutants it fails (any secret)
    false_failures: int = 0
    stub_passes: int = 0
    varying_cases: list[str] = field(default_factory=list)
    seconds: float = 0.0
    runs: int = 0                                            # gradings that ran it


@dataclass
class ExerciseFindings:
    exercise: str
    tests: list[TestRow]
    mutants: list[MutantRow]
    false_failures: list[FalseFailure]
    stub_passes: list[StubPass]
    missed: list[MissedExpectation]
    varying: list[VaryingVerdict]
    cases: dict[str, int]                                    # kind -> how many cases
    seconds: float

    @property
    def survivors(self) -> list[str]:
        return [m.case for m in self.mutants if m.survivor]

    @property
    def secret_dependent(self) -> list[MutantRow]:
        return [m for m in self.mutants if m.secret_dependent]

    @property
    def idle_tests(self) -> list[str]:
        return [t.name for t in self.tests if not t.kills]

    def problems(self) -> list[str]:
        """What makes the audit fail (exit code 1), one line each."""
        out = [f"{self.exercise}: survivor {m}" for m in self.survivors]
        out += [f"{self.exercise}: {m.case} survives under {', '.join(m.survived_under)}"
                for m in self.secret_dependent]
        out += [f"{self.exercise}: {m.mutant} fails no test matching {m.words} ({m.secret})" for m in self.missed]
        out += [f"{self.exercise}: false failure {f.case} on {f.test!r} ({f.secret})" for f in self.false_failures]
        out += [f"{self.exercise}: the stub passes {s.test!r} ({s.secret})" for s in self.stub_passes]
        return out


def _by_secret(gradings: list[Grading]) -> dict[str, dict[str, Grading]]:
    """case label -> secret label -> grading."""
    out: dict[str, dict[str, Grading]] = {}
    for g in gradings:
        out.setdefault(g.case, {})[g.secret] = g
    return out


def _test_rows(exercise: str, cases: list[Case], graded: dict[str, dict[str, Grading]]) -> dict[str, TestRow]:
    """Every test of ``exercise`` any grading ran, in suite order, with its time."""
    rows: dict[str, TestRow] = {}
    for case in cases:
        for grading in graded.get(case.label, {}).values():
            for t in grading.of(exercise):
                row = rows.setdefault(t.name, TestRow(t.number, t.name, t.max_score))
                row.seconds += t.seconds
                row.runs += 1
    return dict(sorted(rows.items(), key=lambda kv: _number_key(kv[1].number)))


def _number_key(number: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in number.split("."))
    except ValueError:
        return (1 << 30,)


def _mutant_row(case: Case, exercise: str, by_secret: dict[str, Grading], order: list[str]) -> MutantRow:
    killed = [s for s in order if s in by_secret and by_secret[s].lost_points(exercise)]
    survived = [s for s in order if s in by_secret and not by_secret[s].error and s not in killed]
    failed = sorted({t.name for g in by_secret.values() for t in g.of(exercise) if not t.passed})
    return MutantRow(case.label, list(case.expected), killed, survived, failed)


def _missed(case: Case, exercise: str, by_secret: dict[str, Grading], order: list[str]) -> list[MissedExpectation]:
    out = []
    for secret in order:
        grading = by_secret.get(secret)
        if grading is None or not grading.lost_points(exercise):
            continue
        failed = [t.name for t in grading.of(exercise) if not t.passed]
        words = [w for w in case.expected if not any(w in name for name in failed)]
        if words:
            out.append(MissedExpectation(case.label, secret, words, failed))
    return out


def _varying(case: Case, exercise: str, by_secret: dict[str, Grading], order: list[str]) -> list[VaryingVerdict]:
    verdicts: dict[str, dict[str, bool]] = {}
    for secret in order:
        for t in by_secret[secret].of(exercise) if secret in by_secret else []:
            verdicts.setdefault(t.name, {})[secret] = t.passed
    return [VaryingVerdict(case.label, name, [s for s, ok in v.items() if not ok], [s for s, ok in v.items() if ok])
            for name, v in verdicts.items() if len(set(v.values())) > 1]


def _false_failures(case: Case, exercise: str, by_secret: dict[str, Grading], order: list[str],
                    rows: dict[str, TestRow]) -> list[FalseFailure]:
    """Tests correct code fails (none for other kinds); counted on their rows."""
    if not case.kind.correct:
        return []
    out = [FalseFailure(case.label, t.name, secret, t.message) for secret in order if secret in by_secret
           for t in by_secret[secret].of(exercise) if not t.passed]
    for failure in out:
        rows[failure.test].false_failures += 1
    return out


def _stub_passes(case: Case, exercise: str, by_secret: dict[str, Grading], order: list[str],
                 rows: dict[str, TestRow]) -> list[StubPass]:
    """Tests a stub passes (none for other kinds); counted on their rows."""
    if case.kind is not CaseKind.STUB:
        return []
    out = [StubPass(t.name, secret) for secret in order if secret in by_secret
           for t in by_secret[secret].of(exercise) if t.passed]
    for passed in out:
        rows[passed.test].stub_passes += 1
    return out


def exercise_findings(exercise: str, cases: list[Case], gradings: list[Grading],
                      secrets: list[SecretChoice]) -> ExerciseFindings:
    """The findings of one exercise from every grading of the cases that grade it."""
    mine = [c for c in cases if exercise in c.exercises]
    graded = _by_secret(gradings)
    order = [s.label for s in secrets]
    rows = _test_rows(exercise, mine, graded)
    mutants, false, stubs, missed, varying = [], [], [], [], []
    for case in mine:
        by_secret = graded.get(case.label, {})
        changes = _varying(case, exercise, by_secret, order)
        varying += changes
        for v in changes:
            rows[v.test].varying_cases.append(case.label)
        if case.kind is CaseKind.MUTANT:
            mutants.append(_mutant_row(case, exercise, by_secret, order))
            missed += _missed(case, exercise, by_secret, order)
            for name in mutants[-1].failed_tests:
                rows[name].kills.append(case.label)
        false += _false_failures(case, exercise, by_secret, order, rows)
        stubs += _stub_passes(case, exercise, by_secret, order, rows)
    counts: dict[str, int] = {}
    for case in mine:
        counts[case.kind.value] = counts.get(case.kind.value, 0) + 1
    return ExerciseFindings(exercise, list(rows.values()), mutants, false, stubs, missed, varying, counts,
                            sum(r.seconds for r in rows.values()))
