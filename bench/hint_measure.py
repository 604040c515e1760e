"""The hint measure: for every bug of a corpus, is the "Likely cause" it gets right, absent or wrong?

    .venv/bin/python bench/hint_measure.py --corpus mutants --jobs 2 \\
        --worker-user ag-diag --save after_mutants.jsonl
    .venv/bin/python bench/hint_measure.py --corpus held --gradings before_held.jsonl \\
        --judgement tests/held_out_corpus/before_judgement.toml

Corpora (``--corpus``, repeatable):

* ``mutants``: ``tests/submissions/<ex>/mutants/*.diff``, each graded on its exercise; its label
  is the ``# cause-id:`` header line (``tests/mutants.py``).
* ``student``: ``tests/student_corpus/bugs/*``, graded on the exercise BUG.txt names; labels in
  ``tests/student_corpus/labels.toml``.
* ``held``: ``tests/held_out_corpus/bugs/*`` (the corpus the diagnoses were NOT built from);
  labels in ``tests/held_out_corpus/labels.toml``. Its correct set is graded on all six exercises.

A label is the set of causes (``autograder.diagnosis.causes.Cause`` ids) a bug may rightly be
told, or none ("none of these: why"). Per bug, over its failing tests on its own exercise:

* **wrong**: some test names a cause (or several that the kit cannot tell apart) none of which
  is in the label: a hint that sends the student the wrong way;
* **right**: no wrong one, and some test names a cause of the label;
* **none**: no test names a cause.

Gradings come from ``python -m autograder grade`` run with ``--kit``'s code (default: this
checkout) under ``--worker-user``, or from ``--gradings`` (a file this script ``--save``d, or
one in the same format: a JSON object per line, ``name``, ``ex``, ``score``, ``max``,
``failed``: ``[{name, cause, output}]``). A cause written as text (a kit before cause ids) is
read back through the causes' sentences; ``--judgement`` gives a person's verdict per bug
instead (for gradings whose texts no longer map to ids).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import re
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

HELD = ROOT / "tests" / "held_out_corpus"
STUDENT = ROOT / "tests" / "student_corpus"
SUBMISSIONS = ROOT / "tests" / "submissions"
ALL_EXERCISES = "ex1,ex2,ex3,ex4,ex5,ex6"


# --------------------------------------------------------------------------- cases

@dataclass(frozen=True)
class Case:
    """One submission to grade: ``name`` (``mutants/ex1/no_scaling``, ``held/<case>``),
    ``exercise`` (what it is graded on), its files (folder) or its one file's source."""
    name: str
    exercises: str
    folder: Path | None = None
    files: tuple[tuple[str, str], ...] = ()
    is_bug: bool = True


def _bug_exercise(folder: Path) -> str:
    return (folder / "BUG.txt").read_text(encoding="utf-8").split()[0]


def cases(corpus: str) -> list[Case]:
    if corpus == "mutants":
        from autograder import contract
        from mutants import mutant_source
        out = []
        for path in sorted(SUBMISSIONS.glob("ex*/mutants/*.diff")):
            ex = contract.BY_ID[path.parent.parent.name]
            out.append(Case(f"mutants/{ex.id}/{path.stem}", ex.id, files=((ex.filename, mutant_source(path)),)))
        return out
    if corpus == "student":
        return [Case(f"student/{p.name}", _bug_exercise(p), folder=p)
                for p in sorted((STUDENT / "bugs").iterdir()) if p.is_dir()]
    if corpus == "held":
        bugs = [Case(f"held/{p.name}", _bug_exercise(p), folder=p)
                for p in sorted((HELD / "bugs").iterdir()) if p.is_dir()]
        correct = [Case(f"held-correct/{p.name}", ALL_EXERCISES, folder=p, is_bug=False)
                   for p in sorted((HELD / "correct").iterdir()) if p.is_dir()]
        return bugs + correct
    raise SystemExit(f"unknown corpus {corpus!r} (mutants, student, held)")


# --------------------------------------------------------------------------- grading

def grade(case: Case, kit: Path, worker_user: str) -> dict:
    """``python -m autograder grade`` of one case with ``kit``'s code; the row saved per case."""
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "submission"
        if case.folder is not None:
            shutil.copytree(case.folder, sub, ignore=shutil.ignore_patterns("BUG.txt"))
        else:
            sub.mkdir()
            for name, text in case.files:
                (sub / name).write_text(text)
        results = Path(tmp) / "results.json"
        env = dict(os.environ, PYTHONPATH=str(kit))
        run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(sub), "--results", str(results),
                              "--exercises", case.exercises, "--worker-user", worker_user],
                             cwd=tmp, env=env, capture_output=True, text=True, timeout=1800)
        if not results.is_file():
            return {"name": case.name, "ex": case.exercises, "score": None, "max": None, "failed": [],
                    "error": run.stderr[-2000:]}
        data = json.loads(results.read_text())
    failed = [{"name": t["name"], "cause": (t.get("extra_data") or {}).get("cause", ""),
               "output": t.get("output", "")} for t in data["tests"] if t["status"] != "passed"]
    return {"name": case.name, "ex": case.exercises, "score": data["score"],
            "max": sum(t["max_score"] for t in data["tests"]), "failed": failed}


def grade_all(todo: list[Case], kit: Path, worker_user: str, jobs: int, save: Path | None) -> list[dict]:
    rows = []
    out = open(save, "w") if save else None
    try:
        with ThreadPoolExecutor(jobs) as pool:
            for row in pool.map(lambda c: grade(c, kit, worker_user), todo):
                rows.append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                print(f"graded {row['name']:60s} {row['score']}/{row['max']}", file=sys.stderr, flush=True)
    finally:
        if out:
            out.close()
    return rows



# --------------------------------------------------------------------------- causes named

# The kit before cause ids (d6cf2d9) wrote each cause as text: its sentences are the Cause
# sentences of today except these (merged, reworded, or filled in with details).
OLD_TEXTS: list[tuple[str, str]] = [
    (r"^an in-place operation on an input", "IN_PLACE"),
    (r"^the mask is a float tensor: masks are torch\.bool", "MASK_NOT_BOOL"),
    (r"^the function's signature lacks the parameter '", "SIGNATURE_MISSING_PARAMETER"),
    (r"^your function returns a single \w+ where its docstring asks for a tuple", "RETURNS_ONE_VALUE"),
    (r"^your dV matches P @ dO", "EX1_BACK_DV_NOT_T"),
    (r"^your dK matches dS @ Q", "EX1_BACK_DK_NOT_T"),
    (r"^a tensor is created on the default device", "TENSOR_ON_DEFAULT_DEVICE"),
    (r"^a \.detach\(\), \.numpy\(\), \.item\(\) or torch\.no_grad\(\) on the way", "DETACHED"),
    (r"^the result is detached from the graph", "DETACHED"),
    (r"^a library attention or softmax|^a built-in attention|^a library helper", "BANNED_API"),
    (r"^each head should hold a contiguous block|^the heads' features are interleaved", "EX3_INTERLEAVED"),
    (r"^you classify from the attention output at the first position.*\(and the scores are not scaled\)$",
     "EX5_FIRST_POSITION_UNSCALED"),
    (r"^you differentiate the cross-entropy loss.*\(and sum it over the batch\)$", "EX5_GRAD_OF_LOSS_SUMMED"),
    (r"^your result matches pe\[:n\] alone", "EX6_ADD_ONLY_PE"),
    (r"^your mask hides the diagonal \(tril with diagonal=-1\)", "EX4_STRICT"),
    (r"^your output matches attending to the first t−1 cached positions", "EX4_NEXT_SKIPS_NEWEST"),
    (r"^no length check: raise ValueError when", "EX6_NO_LENGTH_CHECK"),
    (r"^submodules named differently from the spec", "EX5_SUBMODULES_RENAMED"),
]
_SUFFIXES = (" (and combine_heads only undoes that reshape)", " (in split_heads)")


_WRONG_FORWARD = ("dV = weightsᵀ @ d_output uses wrong weights — ", " (fix scaled_dot_product_attention_np first)")


def _cause_of_text(text: str) -> str:
    from autograder.diagnosis import causes
    text = text.strip()
    if text.startswith(_WRONG_FORWARD[0]):           # the forward pass's mistake, named in the backward's test
        text = text.removeprefix(_WRONG_FORWARD[0]).removesuffix(_WRONG_FORWARD[1])
    for suffix in _SUFFIXES:
        text = text.removesuffix(suffix)
    for cause in causes.every():
        if cause.sentence == text:
            return cause.id
    for pattern, name in OLD_TEXTS:             # names of the single enum before the split
        if re.search(pattern, text, re.S):
            return name.lower().replace("_", ".", 1) if name.startswith("EX") else "general." + name.lower()
    return "?" + text[:70]


def diagnosis_ids(cause) -> list[str]:
    """The ids one failing test named: ``extra_data.cause`` as ids (a list), or as the text
    of a kit before ids (several causes joined by "\\n  or: ")."""
    if isinstance(cause, list):
        return [str(c) for c in cause]
    if isinstance(cause, str) and cause.strip():
        return [_cause_of_text(part) for part in cause.split("\n  or: ")]
    return []


# --------------------------------------------------------------------------- measure

@dataclass
class Measured:
    name: str
    verdict: object
    named: list[list[str]]
    label: object
    judged: str = ""


def labels_for(corpus: str) -> dict[str, object]:
    from hints import HELD_LABELS, STUDENT_LABELS, folder_labels, mutant_labels
    if corpus == "mutants":
        paths = sorted(SUBMISSIONS.glob("ex*/mutants/*.diff"))
        return {f"mutants/{p.parent.parent.name}/{p.stem}": lab for p, lab in mutant_labels(paths).items()}
    if corpus == "student":
        return {f"student/{k}": v for k, v in folder_labels(STUDENT_LABELS).items()}
    return {f"held/{k}": v for k, v in folder_labels(HELD_LABELS).items()}


def measure(rows: list[dict], corpus: str, judgement: dict[str, dict] | None = None) -> list[Measured]:
    from hints import Verdict, verdict
    labels = labels_for(corpus)
    by_name = {r["name"]: r for r in rows}
    out = []
    for name, label in sorted(labels.items()):
        row = by_name.get(name)
        if row is None:
            continue
        own = [t for t in row["failed"] if t["name"].startswith(f"{row['ex']} ")]
        named = [diagnosis_ids(t.get("cause")) for t in own]
        found = verdict(label, named, failed=bool(own))
        judged = ""
        if judgement is not None and name.split("/", 1)[1] in judgement:
            judged = judgement[name.split("/", 1)[1]]["verdict"]
            found = Verdict(judged) if judged != "kept" else Verdict.KEPT
        out.append(Measured(name, found, named, label, judged))
    return out


def print_measure(corpus: str, measured: list[Measured]) -> dict[str, int]:
    from hints import Verdict
    print(f"\n## {corpus}: {len(measured)} bugs\n")
    for m in measured:
        ids = sorted({i for d in m.named for i in d})
        want = ", ".join(sorted(m.label.causes)) or f"none ({m.label.why[:60]})"
        print(f"{m.verdict.value:16s} {m.name:55s} named: {', '.join(ids) or '-'}   label: {want}")
    counts = {v.value: sum(m.verdict == v for m in measured) for v in Verdict}
    n = len(measured) or 1
    print(f"\n{corpus}: right {counts['right']} ({counts['right'] / n:.0%}), none {counts['none']}, "
          f"wrong {counts['wrong']}, kept full marks {counts['kept full marks']}")
    return counts


def held_correct(rows: list[dict]) -> None:
    for row in rows:
        if row["name"].startswith("held-correct/"):
            lost = [t["name"] for t in row["failed"]]
            print(f"{row['name']}: {row['score']}/{row['max']}" + (f" — lost on {lost}" if lost else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", choices=("mutants", "student", "held"), required=True)
    parser.add_argument("--gradings", type=Path, help="measure these gradings instead of grading")
    parser.add_argument("--save", type=Path, help="write the gradings here (one JSON object per line)")
    parser.add_argument("--kit", type=Path, default=ROOT, help="the kit checkout to grade with (PYTHONPATH)")
    parser.add_argument("--worker-user", default="ag-diag")
    parser.add_argument("--jobs", type=int, default=2, help="parallel gradings (at most 2)")
    parser.add_argument("--judgement", type=Path, help="a person's verdict per held-out bug (TOML)")
    parser.add_argument("--only", default="", help="only the cases whose name contains one of these "
                                                    "comma-separated words (a quick look)")
    parser.add_argument("--show", action="store_true", help="print each failing test's message too")
    args = parser.parse_args()
    if args.gradings:
        rows = [json.loads(line) for line in args.gradings.read_text().splitlines() if line.strip()]
    else:
        words = [w for w in args.only.split(",") if w] or [""]
        rows = grade_all([c for name in args.corpus for c in cases(name) if any(w in c.name for w in words)],
                         args.kit.resolve(),
                         args.worker_user, max(1, min(args.jobs, 2)), args.save)
    judgement = tomllib.loads(args.judgement.read_text()) if args.judgement else None
    if args.show:
        for row in rows:
            print(f"\n===== {row['name']}: {row['score']}/{row['max']}")
            for t in row["failed"]:
                print(f"  ✗ {t['name']}  [{', '.join(diagnosis_ids(t.get('cause'))) or '-'}]")
                print("      " + t["output"][:700].replace("\n", "\n      "))
    for corpus in args.corpus:
        print_measure(corpus, measure(rows, corpus, judgement if corpus == "held" else None))
        if corpus == "held":
            held_correct(rows)


if __name__ == "__main__":
    main()
