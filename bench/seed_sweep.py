"""Do the hidden suites hold for ANY seed secret? Grade the corpus under many secrets.

    .venv/bin/python bench/seed_sweep.py [--secrets 30] [--jobs 2] [--exercises ex1,ex3]
                                         [--kinds solution,alternative,mutant] [--out sweep.jsonl]

Hidden inputs are derived from the build's secret, the submission and the test
(``autograder/seeds.py``), so a suite that only works for the inputs of one secret would
fail correct code, or let a mutant through, on some students' submissions. This grades,
for each of ``--secrets`` secrets (``sweep_secret(i)``: fixed, so a run can be repeated):

* the model solution and every alternative correct style (``tests/submissions/*/alternatives``):
  must get full marks;
* every mutant (``tests/submissions/*/mutants``): must lose points, on every test its
  ``# expect-fail:`` line names, and no failing test may hint at a mistake outside its
  ``# cause-id:`` label (``test_mutant_gets_no_wrong_hint``);
* with ``--kinds student`` (not by default: 72 gradings a secret), the blind student corpus
  (``tests/student_corpus``): correct styles keep full marks, each bug loses points on a
  test about its function, with no wrong hint (the verdicts of ``tests/test_student_corpus.py``);
* with ``--kinds contract`` (not by default: six gradings of every exercise a secret), the
  correct sets written from the contract alone and in the field's canonical idioms
  (``tests/contract_corpus``): full marks on every exercise (``tests/test_contract_corpus.py``).

It reports every verdict that breaks under some secret (with the secret, so the case can be
replayed with ``seeds.secret_override``), mutants whose failed tests vary between secrets
(not wrong, but worth a look), and the time taken. Exit status 1 when a verdict breaks.
``--jobs N`` runs N grading processes, each on every N-th secret.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
sys.path.insert(0, str(ROOT))
from autograder.audit.model import sweep_secret  # noqa: E402  (the i-th secret: shared with `audit --secrets`)


@dataclass(frozen=True)
class Case:
    exercise: str
    kind: str               # "solution", "alternative", "mutant", "student" or "contract"
    name: str
    path: Path | None       # the alternative or mutant file, the student folder; None for the solution

    @property
    def label(self) -> str:
        return f"{self.exercise}/{self.kind}/{self.name}"


def corpus(exercises: list[str] | None = None, kinds: tuple[str, ...] = ("solution", "alternative", "mutant")) -> list[Case]:
    """The kit's corpus: per exercise its solution, alternatives and mutants."""
    sys.path.insert(0, str(TESTS))
    from autograder import contract
    cases: list[Case] = []
    for ex in contract.EXERCISES:
        if exercises and ex.id not in exercises:
            continue
        folder = ex.corpus_folder(ROOT)
        if "solution" in kinds:
            cases.append(Case(ex.id, "solution", "solution", None))
        if "alternative" in kinds:
            cases += [Case(ex.id, "alternative", p.stem, p) for p in sorted((folder / "alternatives").glob("*.py"))]
        if "mutant" in kinds:
            cases += [Case(ex.id, "mutant", p.stem, p) for p in sorted((folder / "mutants").glob("*.diff"))]
    if "contract" in kinds:
        from contract_corpus_cases import sets
        ids = ",".join(ex.id for ex in contract.EXERCISES if not exercises or ex.id in exercises)
        cases += [Case(ids, "contract", folder.name, folder) for folder in sets()]
    if "student" in kinds:
        from student_corpus_cases import CORPUS, exercises_of
        for folder in sorted(p for kind in ("correct", "bugs") for p in (CORPUS / kind).iterdir() if p.is_dir()):
            if not exercises or set(exercises_of(folder).split(",")) & set(exercises):
                cases.append(Case(exercises_of(folder), "student", f"{folder.parent.name}-{folder.name}", folder))
    return cases


def files_of(case: Case) -> dict[str, bytes | str]:
    """The case as a submission: path in it -> its bytes (or text)."""
    sys.path.insert(0, str(TESTS))
    from autograder import contract
    from mutants import as_submitted, mutant_source
    if case.kind in ("student", "contract"):
        return {p.relative_to(case.path).as_posix(): p.read_bytes() for p in sorted(case.path.rglob("*"))
                if p.is_file() and p.name != "BUG.txt" and "__pycache__" not in p.parts}
    ex = contract.BY_ID[case.exercise]
    if case.kind == "solution":
        return {ex.filename: as_submitted((ROOT / "solutions" / ex.folder / ex.filename).read_text())}
    if case.kind == "alternative":
        return {ex.filename: case.path.read_text()}
    return {ex.filename: mutant_source(case.path)}


def problem_of(case: Case, results) -> str:
    """What is wrong with a case's grading ("" when its verdict holds): correct code lost
    points, a mutant kept full marks or missed a test it must fail, a student bug missed."""
    sys.path.insert(0, str(TESTS))
    if case.kind == "student":
        from student_corpus_cases import problem_of as student_problem, wrong_hint
        return student_problem(case.path, results) or (wrong_hint(case.path, results)
                                                       if case.path.parent.name == "bugs" else "")
    if case.kind == "contract":
        from contract_corpus_cases import problem_of as contract_problem
        return contract_problem(case.path, results)
    from mutants import expected_failures
    failed = sorted(t.name for t in results.tests if not t.passed)
    full = results.score >= results.max_score - 1e-9
    if case.kind != "mutant":
        return "" if full else "correct code lost points: " + "; ".join(
            f"{t.name}: {t.output[:300]}" for t in results.tests if not t.passed)
    from hints import mutant_labels, wrong_ones
    missed = [w for w in expected_failures(case.path) if not any(w in n for n in failed)]
    if full:
        return "the mutant kept full marks"
    if missed:
        return f"no failing test matches {missed}"
    label = mutant_labels([case.path])[case.path]                  # test_mutant_gets_no_wrong_hint's rule
    wrong = wrong_ones(label, [list(t.cause) for t in results.tests if not t.passed])
    return f"label {sorted(label.causes)}, but failing tests named {wrong}" if wrong else ""


def _grade_here(files: dict[str, bytes | str], exercises: str, secret: str):
    """Grade in this process under ``secret`` (the sweep's own grading)."""
    from autograder import seeds
    from helpers import grade_folder
    with tempfile.TemporaryDirectory() as tmp, seeds.secret_override(secret):
        folder = Path(tmp) / "submission"
        for name, content in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        return grade_folder(folder, exercises)


def grade_case(case: Case, secret: str, grade=None) -> dict:
    """Grade one case under ``secret`` (with ``grade(files, exercises, secret)``: the tests'
    shared gradings; default: in this process); its verdict as a JSON-able dict."""
    sys.path.insert(0, str(TESTS))
    results = (grade or _grade_here)(files_of(case), case.exercise, secret)
    problem = problem_of(case, results)
    return {"case": case.label, "secret": secret, "score": results.score, "max": results.max_score,
            "failed": sorted(t.name for t in results.tests if not t.passed), "ok": not problem,
            "problem": problem}


def run_shard(cases: list[Case], secrets: list[str], out) -> None:
    from autograder.sandbox import forkserver, levels
    levels.detect()
    forkserver.shared()
    for secret in secrets:
        for case in cases:
            print(json.dumps(grade_case(case, secret)), file=out, flush=True)


def summarise(rows: list[dict], seconds: float, n_secrets: int) -> tuple[str, bool]:
    """The report, and whether every verdict held."""
    by_case: dict[str, list[dict]] = {}
    for row in rows:
        by_case.setdefault(row["case"], []).append(row)
    broken = [r for r in rows if not r["ok"]]
    varying = {c: sorted({tuple(r["failed"]) for r in rs}) for c, rs in by_case.items()
               if "/mutant/" in c and len({tuple(r["failed"]) for r in rs}) > 1}
    kinds = {k: sum(1 for c in by_case if f"/{k}/" in c)
             for k in ("solution", "alternative", "mutant", "student", "contract")}
    lines = [f"seed sweep: {n_secrets} secrets x {len(by_case)} cases ({kinds['solution']} solutions, "
             f"{kinds['alternative']} alternatives, {kinds['mutant']} mutants, {kinds['student']} student "
             f"submissions, {kinds['contract']} correct sets from the contract) = {len(rows)} gradings "
             f"in {seconds / 60:.1f} min",
             f"verdicts broken: {len(broken)}" + ("" if broken else " (every correct style got full marks, "
                                                   "every mutant failed its named tests with no wrong hint, every student bug lost points on "
                                                   "its function, under every secret)")]
    for r in broken:
        lines.append(f"  BROKEN {r['case']} secret {r['secret'][:16]}…: {r['problem'][:500]}")
    lines.append(f"mutants whose failed tests vary with the secret (verdict held): {len(varying)}")
    for case, sets in sorted(varying.items()):
        common = set(sets[0]).intersection(*map(set, sets[1:]))
        sometimes = sorted(set().union(*map(set, sets)) - common)
        lines.append(f"  {case}: sometimes also fails {sometimes}")
    return "\n".join(lines), not broken


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--secrets", type=int, default=30)
    p.add_argument("--first", type=int, default=0, help="index of the first secret (sweep_secret(i))")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--exercises", default=None)
    p.add_argument("--kinds", default="solution,alternative,mutant")
    p.add_argument("--out", default=None, help="JSON lines, one per grading (default: a temporary file)")
    p.add_argument("--shard", default=None, help=argparse.SUPPRESS)     # "i/n": this process's part
    args = p.parse_args(argv)
    exercises = args.exercises.split(",") if args.exercises else None
    cases = corpus(exercises, tuple(args.kinds.split(",")))
    secrets = [sweep_secret(i) for i in range(args.first, args.first + args.secrets)]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        run_shard(cases, secrets[i::n], sys.stdout)
        return 0
    out = Path(args.out or tempfile.mkstemp(suffix=".jsonl", prefix="seed-sweep-")[1])
    started = time.monotonic()
    cmd = [sys.executable, __file__, "--secrets", str(args.secrets), "--first", str(args.first),
           "--kinds", args.kinds] + (["--exercises", args.exercises] if args.exercises else [])
    parts = [out.with_name(f"{out.stem}.{i}{out.suffix}") for i in range(args.jobs)]
    handles = [part.open("w") for part in parts]
    procs = [subprocess.Popen(cmd + ["--shard", f"{i}/{args.jobs}"], stdout=handle, cwd=ROOT)
             for i, handle in enumerate(handles)]
    codes = [proc.wait() for proc in procs]
    for handle in handles:
        handle.close()
    out.write_text("".join(part.read_text() for part in parts))
    for part in parts:
        part.unlink()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    report, held = summarise(rows, time.monotonic() - started, len(secrets))
    print(report)
    print(f"(gradings: {out}; command: {' '.join([Path(sys.executable).name, 'bench/seed_sweep.py'] + (argv if argv is not None else sys.argv[1:]))})")
    return 0 if held and not any(codes) and len(rows) == len(cases) * len(secrets) else 1


if __name__ == "__main__":
    sys.exit(main())
