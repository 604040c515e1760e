"""A class of 32 submissions built from the kit's corpora, as a Gradescope export, for the
course-staff outputs (tests/test_staff_class.py, bench/bench_staff.py).

* 13 correct, each written independently: the model solutions, the five styles of
  ``student_corpus/correct``, the held-out corpus's base and the six sets of ``contract_corpus``;
  one of them (``contract_b``) is a **group** submission of two students;
* 13 with one bug: eight of ``student_corpus/bugs`` (bases a–e), three of ``held_out_corpus/bugs``
  (used as data only) and two mutants of the solutions (``tests/submissions``), so some
  misconceptions are shared (the mask convention inverted: three students);
* 4 hostile (``tests/hostile``, ex1 only): snooping the grader's frames, reading the kit's
  files, a syntax error, junk; one of them named with markup, quotes and a bidi override;
* 1 with no graded file (a README only);
* 1 near-copy of the ``cs231n`` set: comments dropped, names changed, blank lines added;
  its metadata has no ``created_at`` (its time comes from its files);
* late: due :data:`DUE`, three submitted after it (one within the penalty, one after the
  cut-off, one with an extension in :func:`write_extensions`).

Each :class:`Student` records where its code comes from (``lineage``: which independently
written set each file derives from), so a test can say which pairs are copies by construction.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from autograder import contract
from mutants import mutant_source

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
EXERCISES = contract.DEFAULT
DUE = datetime.fromisoformat("2026-12-01T23:59:00+01:00")
PENALTY = "10%/day"
CUTOFF = "+72h"
HOSTILE_NAME = "<script>alert(\"pwned\")</script> O'Brien \u202egnp.exe"
GROUP = ("Ivan Ivanov", "Julia Jones")

CORRECT = {
    "solutions": None,
    "a_plain": TESTS / "student_corpus/correct/a_plain",
    "b_einsum_1e9": TESTS / "student_corpus/correct/b_einsum_1e9",
    "c_loops_pcolormesh": TESTS / "student_corpus/correct/c_loops_pcolormesh",
    "d_float64_internal": TESTS / "student_corpus/correct/d_float64_internal",
    "e_windows_crlf_bom_tabs": TESTS / "student_corpus/correct/e_windows_crlf_bom_tabs",
    "blind_base": TESTS / "held_out_corpus/correct/blind_base",
    **{name: TESTS / "contract_corpus" / name
       for name in ("annotated", "contract_a", "contract_b", "cs231n", "nanogpt", "tutorial")},
}
# (corpus folder, the correct set it derives from)
STUDENT_BUGS = {
    "ex1_softmax_no_max_shift": "a_plain", "ex2_no_colorbar": "a_plain",
    "ex1_np_mask_inverted": "b_einsum_1e9", "ex1_backward_dV_not_transposed": "c_loops_pcolormesh",
    "ex1_np_mask_where_zero": "d_float64_internal", "ex3_combine_no_transpose": "d_float64_internal",
    "ex5_accuracy_returns_tensor": "e_windows_crlf_bom_tabs", "ex4_csa_masks_the_past": "e_windows_crlf_bom_tabs",
}
HELD_OUT_BUGS = ("ex1_sdpa_np_mask_inverted", "ex4_causal_mask_upper_triangle", "ex5_train_no_zero_grad")
MUTANTS = ("np_no_sqrt_scaling", "torch_no_scaling")          # of ex1's solution
HOSTILE = ("frame_snooping", "read_kit_files", "syntax_error", "honest_junk")
FIRST = ("Ada", "Alan", "Barbara", "Claude", "Dorothy", "Edsger", "Frances", "Grace", "Hedy", "John", "Karen",
         "Leslie", "Margaret", "Niklaus", "Radia", "Shafi", "Tim", "Whitfield", "Yann", "Zhang", "Fei-Fei",
         "Geoffrey", "Joan", "Ken", "Lynn", "Mary", "Noam", "Peter", "Rosalind", "Sophie", "Vint", "Xavier")
LAST = ("Lovelace", "Turing", "Liskov", "Shannon", "Vaughan", "Dijkstra", "Allen", "Hopper", "Lamarr", "Backus",
        "Jones", "Lamport", "Hamilton", "Wirth", "Perlman", "Goldwasser", "Berners", "Diffie", "LeCun", "Wei",
        "Li", "Hinton", "Clarke", "Thompson", "Conway", "Somerville", "Chomsky", "Naur", "Picard", "Wilson",
        "Cerf", "Leroy")


@dataclass
class Student:
    """One submission of the class."""
    folder: str                                   # submission_<id>
    names: tuple[str, ...]                        # its submitters (a group: two)
    kind: str                                     # correct | bug | hostile | nofiles | copy
    lineage: str = ""                             # the correct set its files derive from ("" for hostile / none)
    created_at: datetime | None = None            # None: no created_at in the metadata
    files_time: datetime | None = None            # set as the files' modification time
    emails: tuple[str, ...] = ()
    sids: tuple[str, ...] = ()
    extension_hours: int = 0
    notes: list[str] = field(default_factory=list)


def _solution_files() -> dict[str, str]:
    from mutants import as_submitted
    return {ex.filename: as_submitted((ROOT / "solutions" / ex.folder / ex.filename).read_text(encoding="utf-8"))
            for ex in EXERCISES}


def _copy_set(source: Path | None, dest: Path) -> None:
    dest.mkdir(parents=True)
    if source is None:
        for name, text in _solution_files().items():
            (dest / name).write_text(text, encoding="utf-8")
        return
    for ex in EXERCISES:
        if (source / ex.filename).is_file():
            shutil.copy(source / ex.filename, dest / ex.filename)


def disguise(source: str) -> str:
    """A near-copy: comments and docstring-free lines kept, comments dropped, local names
    changed, a blank line after every block header (what hiding a copy by hand looks like)."""
    out = []
    renames = {"scores": "logits", "weights": "attn", "output": "result", "mask": "m", "hidden": "h_state"}
    for line in source.splitlines():
        if line.lstrip().startswith("#"):
            continue
        line = re.sub(r"\s+#.*$", "", line) if "#" in line and "'" not in line and '"' not in line else line
        for old, new in renames.items():
            line = re.sub(rf"\b{old}\b", new, line)
        out.append(line)
        if line.rstrip().endswith(":"):
            out.append("")
    return "\n".join(out) + "\n"


def _hostile(case: str, dest: Path) -> None:
    from hostile_cases import build_submission
    folder = build_submission(case, dest.parent / f".{dest.name}-build", "staffclass", "0" * 64)
    shutil.copytree(folder, dest)
    shutil.rmtree(folder.parent, ignore_errors=True)


def build(root: Path) -> tuple[Path, list[Student]]:
    """The class as a Gradescope export under ``root/export``; its students, in folder order."""
    export = root / "export"
    export.mkdir(parents=True)
    students: list[Student] = []
    names = iter(zip(FIRST, LAST))

    def add(kind: str, lineage: str, *, people: tuple[str, ...] | None = None,
            created: timedelta | None = -timedelta(hours=6), files: datetime | None = None) -> tuple[Student, Path]:
        number = 100 + len(students) + 1
        who = people or (" ".join(next(names)),)
        student = Student(f"submission_{number}", who, kind, lineage,
                          created_at=DUE + created if created is not None else None, files_time=files,
                          emails=tuple(f"{re.sub(r'[^a-z]', '', n.lower().split()[-1])}{number}@uni.example"
                                       for n in who),
                          sids=tuple(f"S{number}{i}" for i in range(len(who))))
        students.append(student)
        return student, export / student.folder

    for name, source in CORRECT.items():
        people = GROUP if name == "contract_b" else None
        _, dest = add("correct", name, people=people)
        _copy_set(source, dest)
    for bug, base in STUDENT_BUGS.items():
        _, dest = add("bug", base)
        _copy_set(TESTS / "student_corpus/bugs" / bug, dest)
    for bug in HELD_OUT_BUGS:
        _, dest = add("bug", "blind_base")
        _copy_set(TESTS / "held_out_corpus/bugs" / bug, dest)
    for mutant in MUTANTS:
        _, dest = add("bug", "solutions")
        _copy_set(None, dest)
        (dest / "attention.py").write_text(mutant_source(TESTS / "submissions/ex1/mutants" / f"{mutant}.diff"),
                                           encoding="utf-8")
    for case in HOSTILE:
        people = (HOSTILE_NAME,) if case == "honest_junk" else None
        _, dest = add("hostile", "", people=people)
        _hostile(case, dest)
    _, dest = add("nofiles", "")
    dest.mkdir()
    (dest / "README.txt").write_text("I could not get it to work, sorry.\n", encoding="utf-8")
    copy, dest = add("copy", "cs231n", created=None, files=DUE + timedelta(hours=2))
    dest.mkdir()
    for ex in EXERCISES:
        source = CORRECT["cs231n"] / ex.filename
        (dest / ex.filename).write_text(disguise(source.read_text(encoding="utf-8")), encoding="utf-8")

    _make_late(students)
    for student in students:
        if student.files_time is not None:
            stamp = student.files_time.timestamp()
            for path in [export / student.folder, *(export / student.folder).rglob("*")]:
                os.utime(path, (stamp, stamp), follow_symlinks=False)
    (export / "submission_metadata.yml").write_text(metadata(students), encoding="utf-8")
    return export, students


def _make_late(students: list[Student]) -> None:
    """Three late submissions among the correct ones: 5 h (one day's penalty), 100 h (past
    the cut-off), 30 h with a 48 h extension (on time)."""
    by_lineage = {s.lineage: s for s in students if s.kind == "correct"}
    by_lineage["nanogpt"].created_at = DUE + timedelta(hours=5)
    by_lineage["tutorial"].created_at = DUE + timedelta(hours=100)
    by_lineage["annotated"].created_at = DUE + timedelta(hours=30)
    by_lineage["annotated"].extension_hours = 48


def _yaml(value: str) -> str:
    return json.dumps(value, ensure_ascii=True)              # a JSON string is a YAML double-quoted scalar


def metadata(students: list[Student]) -> str:
    """``submission_metadata.yml`` as Gradescope writes it (keys with a leading colon)."""
    lines = []
    for s in students:
        lines.append(f"{s.folder}:")
        lines.append("  :submitters:")
        for name, email, sid in zip(s.names, s.emails, s.sids):
            lines += [f"  - :name: {_yaml(name)}", f"    :sid: {_yaml(sid)}", f"    :email: {_yaml(email)}"]
        if s.created_at is not None:
            stamp = s.created_at.strftime("%Y-%m-%d %H:%M:%S.000000000 %z")
            lines.append(f"  :created_at: {stamp[:-2]}:{stamp[-2:]}")
        lines.append("  :score: 0.0")
    return "\n".join(lines) + "\n"


def write_extensions(path: Path, students: list[Student]) -> Path:
    """The extensions CSV for the students that have one (by email)."""
    rows = ["email,extra_hours"] + [f"{s.emails[0]},{s.extension_hours}" for s in students if s.extension_hours]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path
