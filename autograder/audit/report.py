"""The audit's report: ``audit.md`` for people, ``audit.json`` for programs.

``audit.json`` holds everything ``audit.md`` shows, plus the raw matrix it was computed from
(``gradings``: every case under every secret, every test's verdict, time and failure message),
so a program (or the kit's own test) can check any cell.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.audit.cases import Case
from autograder.audit.model import Grading, SecretChoice
from autograder.audit.tables import ExerciseFindings
from autograder.jsontypes import JSONObject

FORMAT = 1                      # audit.json's format version


@dataclass
class CaseEntry:
    label: str
    kind: str
    origin: str
    exercises: list[str]
    expected: list[str]
    path: str


@dataclass
class Audit:
    """A whole audit: the findings per exercise and the gradings they come from."""
    exercises: list[ExerciseFindings]
    cases: list[Case]
    secrets: list[SecretChoice]
    gradings: list[Grading]
    jobs: int
    wall_seconds: float
    extra: str = ""                        # the --extra folder ("" when none)
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Grading]:
        """Gradings the engine could not finish at all."""
        return [g for g in self.gradings if g.error]

    def problems(self) -> list[str]:
        """Everything that makes the exit code 1."""
        out = [f"could not grade {g.case} ({g.secret}): {g.error.splitlines()[0] if g.error else ''}"
               for g in self.errors]
        for findings in self.exercises:
            out += findings.problems()
        return out

    @property
    def exit_code(self) -> int:
        return 1 if self.problems() else 0

    def to_json(self) -> JSONObject:
        return {
            "format": FORMAT, "ok": not self.problems(), "problems": self.problems(),
            "wall_seconds": round(self.wall_seconds, 3), "jobs": self.jobs, "extra": self.extra,
            "secrets": [{"label": s.label, "fingerprint": s.fingerprint} for s in self.secrets],
            "cases": [asdict(CaseEntry(c.label, c.kind.value, c.origin.value, list(c.exercises),
                                       list(c.expected), c.path)) for c in self.cases],
            "exercises": [_findings_json(f) for f in self.exercises],
            "gradings": [g.to_json() for g in self.gradings],
            "notes": self.notes,
        }


def _findings_json(f: ExerciseFindings) -> JSONObject:
    data = asdict(f)
    data.update(survivors=f.survivors, idle_tests=f.idle_tests,
                secret_dependent=[m.case for m in f.secret_dependent], problems=f.problems())
    for row, mutant in zip(data["mutants"], f.mutants):
        row.update(survivor=mutant.survivor, secret_dependent=mutant.secret_dependent)
    for row in data["tests"]:
        row["seconds"] = round(row["seconds"], 3)
    data["seconds"] = round(data["seconds"], 3)
    return data


def write(audit: Audit, out: Path) -> tuple[Path, Path]:
    """``out/audit.md`` and ``out/audit.json``."""
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "audit.md", out / "audit.json"
    md.write_text(markdown(audit), encoding="utf-8")
    js.write_text(json.dumps(audit.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return md, js


# --------------------------------------------------------------------------- markdown

def _cell(text: object) -> str:
    """Text safe in a markdown table cell: one line, no pipes."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _names(labels: list[str], limit: int = 8) -> str:
    short = [label.rsplit("/", 1)[-1] for label in labels]
    more = f" … (+{len(short) - limit})" if len(short) > limit else ""
    return ", ".join(short[:limit]) + more


def _headline(audit: Audit) -> list[str]:
    problems = audit.problems()
    verdict = ("**PASS**: no false failures, survivors, stub passes or missed expectations"
               if not problems else f"**FAIL**: {len(problems)} problem(s), exit code 1")
    counts: dict[str, int] = {}
    for case in audit.cases:
        counts[case.kind.value] = counts.get(case.kind.value, 0) + 1
    lines = ["# Suite audit", "", verdict, "",
             f"- exercises: {', '.join(f.exercise for f in audit.exercises)}",
             f"- cases: {len(audit.cases)} (" + ", ".join(f"{n} {k}" for k, n in counts.items()) + ")"
             + (f"; extra folder: `{audit.extra}`" if audit.extra else ""),
             "- secrets: " + ", ".join(f"{s.label} (sha256 {s.fingerprint})" for s in audit.secrets),
             f"- gradings: {len(audit.gradings)} ({len(audit.cases)} cases × {len(audit.secrets)} secrets), "
             f"{audit.jobs} grading processes, wall time {audit.wall_seconds:.1f} s"]
    lines += [f"- note: {n}" for n in audit.notes]
    if problems:
        lines += ["", "## Problems", ""] + [f"- {_cell(p)}" for p in problems]
    return lines


def _summary_table(audit: Audit) -> list[str]:
    lines = ["", "## Per exercise", "",
             "| exercise | tests | mutants | killed | survivors | caught under some secrets only | "
             "idle tests | false failures | stub passes | test seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for f in audit.exercises:
        killed = sum(1 for m in f.mutants if m.killed_under)
        lines.append(f"| {f.exercise} | {len(f.tests)} | {len(f.mutants)} | {killed} | {len(f.survivors)} | "
                     f"{len(f.secret_dependent)} | {len(f.idle_tests)} | {len(f.false_failures)} | "
                     f"{len(f.stub_passes)} | {f.seconds:.1f} |")
    return lines


def _exercise_section(f: ExerciseFindings) -> list[str]:
    lines = ["", f"## {f.exercise}", "",
             "Cases: " + ", ".join(f"{n} {k}" for k, n in f.cases.items()) + ".", ""]
    lines += _problem_lists(f)
    lines += ["", "### Tests", "",
              "| # | test | points | mutants it kills | false failures | stub passes | verdict varies with the secret for | seconds (runs) |",
              "|---|---|---|---|---|---|---|---|"]
    for t in f.tests:
        lines.append(f"| {t.number} | {_cell(t.name)} | {t.max_score:g} | {len(t.kills)}: {_cell(_names(t.kills))} | "
                     f"{t.false_failures} | {t.stub_passes} | {_cell(_names(t.varying_cases)) or '–'} | "
                     f"{t.seconds:.2f} ({t.runs}) |")
    lines += ["", "### Mutants", "", "| mutant | killed under | survived under | tests it fails | expect-fail |",
              "|---|---|---|---|---|"]
    for m in f.mutants:
        lines.append(f"| {_cell(m.case)} | {', '.join(m.killed_under) or '–'} | {', '.join(m.survived_under) or '–'} | "
                     f"{len(m.failed_tests)}: {_cell('; '.join(n.split(' · ', 1)[-1] for n in m.failed_tests)[:300])} | "
                     f"{_cell(' | '.join(m.expected)) or '(any)'} |")
    return lines


def _problem_lists(f: ExerciseFindings) -> list[str]:
    lines = [f"- survivors (no test fails them under any secret): {', '.join(f.survivors) or 'none'}",
             "- caught under some secrets only: " + (", ".join(
                 f"{m.case} (killed under {', '.join(m.killed_under)}; survives under {', '.join(m.survived_under)})"
                 for m in f.secret_dependent) or "none"),
             "- tests no mutant fails: " + (f"{len(f.idle_tests)}" + "".join(f"\n  - {_cell(n)}" for n in f.idle_tests)
                                             if f.mutants else "– (no mutant graded)")]
    lines.append(f"- mutants that miss their `# expect-fail:` test: {len(f.missed)}" + "".join(
        f"\n  - {m.mutant} ({m.secret}): no failing test matches {m.words}; failed: {_cell('; '.join(m.failed))[:300]}"
        for m in f.missed))
    lines.append(f"- false failures of correct code: {len(f.false_failures)}" + "".join(
        f"\n  - {x.case} ({x.secret}) fails **{_cell(x.test)}**: {_cell(x.message)[:400]}" for x in f.false_failures))
    lines.append(f"- tests the stub passes: {len(f.stub_passes)}" + "".join(
        f"\n  - {_cell(s.test)} ({s.secret})" for s in f.stub_passes))
    lines.append(f"- verdicts that change with the secret: {len(f.varying)}" + "".join(
        f"\n  - {v.case} on {_cell(v.test)}: fails under {', '.join(v.failed_under)}, passes under "
        f"{', '.join(v.passed_under)}" for v in f.varying))
    return lines


def markdown(audit: Audit) -> str:
    lines = _headline(audit) + _summary_table(audit)
    for findings in audit.exercises:
        lines += _exercise_section(findings)
    errors = audit.errors
    if errors:
        lines += ["", "## Gradings that could not finish", ""]
        lines += [f"- {g.case} ({g.secret}):\n\n```\n{g.error}\n```" for g in errors]
    return "\n".join(lines) + "\n"
