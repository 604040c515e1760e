"""Grade the blind student corpus (tests/student_corpus/) and report, per submission, its
score on the exercise at stake, which tests failed and whether the feedback names a mistake.

    .venv/bin/python bench/grade_corpus.py [--jobs 2] [--out corpus.jsonl]

Correct styles are graded on all five exercises; a bug submission on the exercise its
BUG.txt names. Used to measure (numbers for notes); tests/test_student_corpus.py asserts.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "student_corpus"


def cases() -> list[tuple[str, Path, str]]:
    out = [(f"correct/{p.name}", p, "ex1,ex2,ex3,ex4,ex5") for p in sorted((CORPUS / "correct").iterdir())]
    for p in sorted((CORPUS / "bugs").iterdir()):
        exercise = (p / "BUG.txt").read_text().split()[0]
        out.append((f"bugs/{p.name}", p, exercise))
    return out


def grade(name: str, folder: Path, exercises: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--results", str(results),
                        "--exercises", exercises, "--worker-user", "ag-corpus"],
                       cwd=tmp, capture_output=True, timeout=900)
        data = json.loads(results.read_text())
    failed = [t for t in data["tests"] if t["status"] != "passed"]
    return {"name": name, "exercises": exercises, "score": data["score"],
            "max": sum(t["max_score"] for t in data["tests"]),
            "failed": [t["name"] for t in failed],
            "named": any("Likely cause" in t.get("output", "") for t in failed),
            "outputs": [t.get("output", "")[:400] for t in failed][:6]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="corpus.jsonl")
    args = parser.parse_args()
    with ThreadPoolExecutor(args.jobs) as pool, open(args.out, "w") as out:
        for row in pool.map(lambda c: grade(*c), cases()):
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{row['name']:55s} {row['score']:6g}/{row['max']:g} named={row['named']}", flush=True)


if __name__ == "__main__":
    main()
