"""The hostile corpus (``tests/hostile/<case>/``): its cases, how each is built and graded
through the real CLI, and what every run must show (used by ``test_hostile.py``, at the
*user* level by ``test_hostile_user_level.py``, and by the engine and batch tests that build
on its templates).

Every case is a submission (see ``tests/hostile/README.md`` for the templating). It is
graded by ``python -m autograder grade`` in a subprocess, exactly as on Gradescope: the fork
server starts before the suites and the reference are imported, which only the CLI path
reproduces. Expectations are written so they do not depend on the hidden suite's exact tests:

* ``zero``            a hostile stub: every test fails, score 0;
* ``full``            a correct solution with harmless but noisy behaviour: full marks;
* ``partial``         the sabotaged baseline: loses points (the sabotage is detected);
* ``no_more_than:X``  an attack on top of case X's code scores no more than X itself.

Whatever the case, the run must end with a schema-valid ``results.json`` written by the
grader (score = sum of its tests), bounded outputs, bounded time, no hidden test source,
reference code, kit paths or grader secrets in it, the kit untouched, and (as root) no
process of the worker user left behind.
"""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder import results as results_mod
from helpers import stub_source, worker_user
import warm_cli

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "hostile"
SOLUTION = ROOT / "solutions" / "ex1_attention" / "attention.py"
SUITE = ROOT / "autograder" / "suites" / "ex1_attention"
REFERENCE = ROOT / "reference"
PYTHON = sys.executable
IS_ROOT = os.geteuid() == 0
EX1_POINTS = 20.0
RUN_BUDGET_S = 60.0                       # wall-clock limit for one grading run
RESULTS_MAX_BYTES = 1_000_000
OUTPUT_MAX_CHARS = 100_000


@dataclass(frozen=True)
class Case:
    expect: str                                    # zero | full | partial | no_more_than:<case>
    root: bool = False                             # needs the unprivileged worker user
    timeout: float = 3.0                           # --timeout (seconds per call)
    import_timeout: float | None = None            # --import-timeout (None: the default, 20 s)
    memory_mb: int | None = None                   # --memory-mb
    contains: tuple[str, ...] = ()                 # regexes some test output (or the summary) must match
    absent: tuple[str, ...] = ()                   # strings results.json must not contain ({token} allowed)
    ran: tuple[str, ...] = ()                      # files the attack must have created (proof it ran)
    not_ran: tuple[str, ...] = ()                  # files that must not exist afterwards
    tamper: bool = False                           # check the kit is byte-for-byte unchanged
    zip: bool = False                              # submit as a zip with escaping entries


# Where an attack leaves proof that it ran (and flags that must survive a worker restart):
# the worker's /tmp and /dev/shm are private (namespaces level) or cleaned of its files
# (user level), so the harness makes this folder for it (sticky, world-writable).
PROOF = "/var/tmp/ag-proof-{token}"


@dataclass(frozen=True)
class Grading:
    """How the corpus is graded: the interpreter, the worker user (one of the corpus's own: the
    leftover check is uid-wide, and the fork bomb spends the user's process limit) and extra
    ``grade`` options (test_hostile_user_level.py: ``--isolation user``)."""
    python: str = sys.executable
    user: str = worker_user("hostile")
    extra_args: tuple[str, ...] = ()

    @property
    def args(self) -> tuple[str, ...]:
        return ("--worker-user", self.user, *self.extra_args)


NO_MORE = "no_more_than:sabotaged_baseline"
JUNK = "no_more_than:honest_junk"          # NaN of the right shapes: earns nothing (tests/test_nonfinite.py)
CASES: dict[str, Case] = {
    # leaving the interpreter
    "exit_at_import": Case("zero", contains=(r"SystemExit",)),
    "os_exit_at_import": Case("zero", contains=(r"exited with status 0",)),
    "exit_in_call": Case("zero", contains=(r"SystemExit",)),
    "os_exit_in_call": Case("zero", contains=(r"exited with status 0",)),
    "keyboard_interrupt_in_call": Case("zero", contains=(r"KeyboardInterrupt",)),
    # hangs and resource bombs
    "infinite_loop_at_import": Case("zero", import_timeout=2.0, contains=(r"did not finish within 2 s",)),
    "infinite_loop_in_call": Case("zero", timeout=1.0, contains=(r"did not finish within 1 s",),
                                  ran=(PROOF + "/softmax",)),
    "memory_bomb_in_call": Case("zero", memory_mb=300, contains=(r"MemoryError|memory limit",),
                                absent=("escaped the memory limit",)),
    "memory_bomb_at_import": Case("zero", memory_mb=300, contains=(r"MemoryError|memory limit",)),
    "fork_bomb": Case("zero", root=True, contains=(r"forked \d{1,2} children and \d{1,2} threads",)),
    "huge_return_value": Case(JUNK, memory_mb=800, contains=(r"larger than 64 MB",)),
    "huge_output_stub": Case("zero"),
    # fooling the judgement
    "monkeypatch_stub": Case("zero"),
    "honest_junk": Case("zero"),
    "ndarray_subclass_liar": Case(JUNK),
    "tensor_subclass_liar": Case(JUNK),
    "lying_object": Case(JUNK),
    "frame_snooping": Case("zero", absent=("reference.attention",)),
    # softmax writes into its input, then rewrites the worker's copies from its callers' frames
    "in_place_frame_patching": Case("partial", contains=(r"softmax modified its input\(s\) x in place",)),
    # the torch function writes into Q and K, then disguises them (an attribute, a class)
    "in_place_tensor_disguise": Case("partial", contains=(r"scaled_dot_product_attention modified its input\(s\) Q, K in place",)),
    "fake_stdout": Case("zero"),
    "conftest_stub": Case("zero", not_ran=("/tmp/{token}-conftest-ran",)),
    "shadow_modules_stub": Case("zero", not_ran=("/tmp/{token}-shadow-ran",)),
    "shadow_modules_solution": Case("full", not_ran=("/tmp/{token}-shadow-ran",)),
    # a wrong function stays wrong, whatever else the file does
    "sabotaged_baseline": Case("partial"),
    "sabotaged_monkeypatch": Case(NO_MORE),
    "sabotaged_conftest": Case(NO_MORE, not_ran=("/tmp/{token}-conftest-ran",)),
    "sabotaged_fake_stdout": Case(NO_MORE),
    "sabotaged_lying_subclass": Case(NO_MORE),
    "sabotaged_frame_snooping": Case(NO_MORE),
    # reaching outside the worker (needs the unprivileged user)
    "read_kit_files": Case("zero", root=True, absent=("{secret}",)),
    "tamper_with_kit": Case("zero", root=True, tamper=True, ran=(PROOF + "/tamper-ran",)),
    "fake_results_file": Case("zero", root=True, tamper=True, absent=("{token}",)),
    "kill_the_grader": Case("zero", root=True),
    # awkward but honest submissions
    "syntax_error": Case("zero", contains=(r"syntax error on line 6",)),
    "huge_stdout_solution": Case("full"),
    "noisy_nested_solution": Case("full"),
    "zip_traversal": Case("full", zip=True),
    "notebook_magics": Case("full"),
}

# Extra entries written into the zip of `zip_traversal` (name -> what to put there).
ZIP_ENTRIES = {
    "my work/attention.py": "solution",
    "../attention.py": "stub",
    "../../evil.py": "evil",
    "../{token}-evil.py": "evil",
    "/tmp/{token}-abs.py": "evil",
    "my work/../../{token}-up.py": "evil",
    "..\\{token}-backslash.py": "evil",
    "__MACOSX/my work/attention.py": "stub",
    "my work/.hidden/attention.py": "stub",
}


# --------------------------------------------------------------------------- templates

SABOTAGE = '''

# --- sabotage: the classic missing 1/sqrt(d_k); the correct version is gone for good
def scaled_dot_product_attention_np(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
'''


def sources() -> dict[str, str]:
    solution = SOLUTION.read_text()
    return {"solution": solution, "stub": stub_source("ex1"), "sabotaged": solution + SABOTAGE,
            "evil": "raise SystemExit('escaped the zip')\n"}


def render(text: str, token: str, secret: str) -> str:
    src = sources()
    lines = []
    for line in text.splitlines(keepends=True):
        directive = line.strip()
        if directive.startswith("#@include "):
            lines.append(src[directive.removeprefix("#@include ").strip()])
        else:
            lines.append(line)
    return "".join(lines).replace("@TOKEN@", token).replace("@SECRET@", secret)


def render_notebook(text: str, token: str, secret: str) -> str:
    nb = json.loads(text)
    for cell in nb["cells"]:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        cell["source"] = render(source, token, secret).splitlines(keepends=True)
    return json.dumps(nb, indent=1)


def build_submission(case: str, dest: Path, token: str, secret: str) -> Path:
    """Copy one corpus folder to ``dest`` with templates applied; a zip for zip cases."""
    folder = dest / "submission"
    for path in sorted((CORPUS / case).rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(CORPUS / case)
        target = folder / (str(rel).removesuffix(".tmpl"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".ipynb":
            target.write_text(render_notebook(path.read_text(), token, secret))
        elif path.suffix in (".py", ".tmpl", ".md", ".txt", ".ini"):
            target.write_text(render(path.read_text(), token, secret))
        else:
            shutil.copy(path, target)
    if not CASES[case].zip:
        return folder
    archive = dest / "upload" / "submission.zip"
    archive.parent.mkdir()
    src = sources()
    with zipfile.ZipFile(archive, "w") as zf:
        for name, what in ZIP_ENTRIES.items():
            zf.writestr(name.replace("{token}", token), src[what])
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name != "attention.py":
                zf.writestr(f"my work/{path.relative_to(folder)}", path.read_bytes())
    shutil.rmtree(folder)
    return archive


# --------------------------------------------------------------------------- leak detection

def _lines(paths) -> set[str]:
    out = set()
    for path in paths:
        try:
            out.update(ln.strip() for ln in Path(path).read_text(errors="replace").splitlines())
        except OSError:
            pass
    return out


def secret_lines(submission_lines: set[str]) -> set[str]:
    """Lines of hidden tests and the reference that must never reach results.json."""
    suites = ROOT / "autograder" / "suites"
    hidden = [p for p in suites.rglob("test_*.py") if "public" not in p.parts]
    public = [p for p in suites.rglob("test_*.py") if "public" in p.parts]
    secrets = _lines(hidden) | _lines(REFERENCE.glob("*.py"))
    support = (ROOT / "autograder" / "support").glob("*.py")      # the worker imports it: readable by design
    allowed = _lines(public) | _lines(support) | submission_lines
    return {ln for ln in secrets - allowed if len(ln) > 30}


def tree_hash(*roots: Path) -> dict[str, str]:
    digest = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*")
                                                     if p.is_file() and "__pycache__" not in p.parts)
        for path in paths:
            digest[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def files_containing(token: str) -> list[str]:
    """Files of the repository (not .venv/.git) that contain ``token``."""
    hits = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in (".venv", ".git", "node_modules")]
        for name in filenames:
            path = Path(dirpath) / name
            if token in name:
                hits.append(str(path))
                continue
            try:
                if path.stat().st_size < 4_000_000 and token.encode() in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                pass
    return hits


def worker_processes(token: str) -> list[str]:
    """Live processes of any worker user that belong to this run (by cwd or environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            if uid == 0 or not pwd.getpwuid(uid).pw_name.startswith("ag-"):
                continue
            status = Path(f"/proc/{entry}/status").read_text()
            if "\nState:\tZ" in status:
                continue
            mine = token in os.readlink(f"/proc/{entry}/cwd")
            mine = mine or token.encode() in Path(f"/proc/{entry}/environ").read_bytes()
            if mine:
                found.append(f"{entry}: " + Path(f"/proc/{entry}/cmdline").read_bytes()
                             .replace(b"\0", b" ").decode(errors="replace")[:120])
        except (OSError, KeyError):
            continue
    return found


# --------------------------------------------------------------------------- one grading run

@dataclass
class Run:
    case: str
    data: dict
    text: str
    elapsed: float
    stdout: str
    stderr: str
    returncode: int
    token: str
    secret: str
    submission_lines: set[str] = field(default_factory=set)

    @property
    def score(self) -> float:
        return float(self.data["score"])

    @property
    def max_score(self) -> float:
        return round(sum(float(t["max_score"]) for t in self.data["tests"]), 4)

    def outputs(self) -> list[str]:
        return [self.data.get("output", "")] + [t.get("output", "") for t in self.data["tests"]]


def grade_case(case: str, tmp: Path, grading: Grading = Grading()) -> Run:
    spec = CASES[case]
    token = f"hostile{uuid.uuid4().hex[:12]}"
    secret = f"SECRET-{uuid.uuid4().hex}"
    work = tmp / case
    work.mkdir(parents=True)
    submission = build_submission(case, work, token, secret)
    sub_lines = _lines(p for p in (submission.rglob("*") if submission.is_dir() else [])
                       if p.is_file()) | {ln.strip() for s in sources().values() for ln in s.splitlines()}
    results_path = work / "out" / "results.json"
    # A per-run temp folder: the worker's home lives in it, so its processes can be told apart.
    tmpdir = Path(f"/tmp/ag-{token}")
    tmpdir.mkdir(mode=0o711)
    tmpdir.chmod(0o711)
    proof = Path(PROOF.format(token=token))
    proof.mkdir(mode=0o1777)
    proof.chmod(0o1777)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(TMPDIR=str(tmpdir), AG_HOSTILE_SECRET=secret, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(ROOT),
               AUTOGRADER_SANDBOX_SHARE=str(proof))    # the worker's own root has no /var/tmp
    cmd = [grading.python, "-m", "autograder", "grade", str(submission), "--exercises", "ex1",
           "--results", str(results_path), "--timeout", str(spec.timeout),
           *(("--import-timeout", str(spec.import_timeout)) if spec.import_timeout else ()), *grading.args]
    if spec.memory_mb:
        cmd += ["--memory-mb", str(spec.memory_mb)]
    started = time.monotonic()
    try:
        proc = warm_cli.run(cmd, cwd=ROOT, env=env, timeout=RUN_BUDGET_S)    # warm when this Python
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: grading did not finish within {RUN_BUDGET_S:g} s")
    elapsed = time.monotonic() - started
    try:
        assert results_path.exists(), f"{case}: no results.json (stderr: {proc.stderr[-2000:]!r})"
        assert results_path.stat().st_size < RESULTS_MAX_BYTES, f"{case}: results.json is too large"
        text = results_path.read_text()
        run = Run(case, json.loads(text), text, elapsed, proc.stdout.decode(errors="replace"),
                  proc.stderr.decode(errors="replace"), proc.returncode, token, secret, sub_lines)
        if IS_ROOT:
            deadline = time.monotonic() + 3.0
            while (left := worker_processes(token)) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not left, f"{case}: processes of the worker user outlived grading: {left}"
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return run


class Corpus:
    """The corpus graded one way (:class:`Grading`): each case graded once, on demand."""

    def __init__(self, grading: Grading, tmp_factory):
        self.grading, self._tmp = grading, tmp_factory
        self.runs: dict[str, Run] = {}

    def grade(self, case: str) -> Run:
        """Grade ``case`` now (again, if it was): the run's proof files stay until cleanup."""
        self.runs[case] = grade_case(case, self._tmp.mktemp("hostile"), self.grading)
        return self.runs[case]

    def graded(self, case: str) -> Run:
        """``case``'s run, graded once (another case's expectation refers to it)."""
        if case not in self.runs:
            cleanup_tmp(self.grade(case).token)
        return self.runs[case]


def cleanup_tmp(token: str) -> None:
    shutil.rmtree(PROOF.format(token=token), ignore_errors=True)
    for path in Path("/tmp").glob(f"{token}*"):
        try:
            path.unlink()
        except OSError:
            pass


# --------------------------------------------------------------------------- what every run must show

def snapshot(path: str) -> str | None:
    p = Path(path)
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None


def check_run(run: Run, spec: Case, corpus: Corpus) -> None:
    """What every graded case must show (see the module's docstring)."""
    case, data = run.case, run.data
    # written by the grader, schema-valid, consistent
    results_mod.validate(data)
    assert run.returncode == 0, f"{case}: the CLI failed ({run.returncode}): {run.stderr[-3000:]}"
    assert run.elapsed < RUN_BUDGET_S
    assert data["tests"], f"{case}: no tests in results.json: {data.get('output', '')[:2000]}"
    assert data["output"].startswith("Total:"), f"{case}: not the grader's final results: {data['output'][:500]}"
    assert data["execution_time"] > 0
    for test in data["tests"]:
        assert test["name"].startswith("ex1 · ") and test["tags"] == ["ex1"], test["name"]
        expected_score = test["max_score"] if test["status"] == "passed" else 0
        assert test["score"] == expected_score, f"{case}: inconsistent test entry {test['name']}"
    assert abs(run.score - sum(t["score"] for t in data["tests"])) < 1e-3, f"{case}: score != sum of tests"
    assert abs(run.max_score - EX1_POINTS) < 1e-3, f"{case}: ex1 should be worth {EX1_POINTS:g}, got {run.max_score}"
    assert 0 <= run.score <= run.max_score
    # bounded outputs
    for text in run.outputs():
        assert len(text) < OUTPUT_MAX_CHARS, f"{case}: an output of {len(text)} characters"
    assert len(run.stdout) < RESULTS_MAX_BYTES, f"{case}: the CLI printed {len(run.stdout)} characters"
    # nothing leaked
    blob = run.text
    assert str(ROOT) not in blob, f"{case}: results.json shows a path of the kit"
    assert run.secret not in blob, f"{case}: a secret from the grader's environment reached results.json"
    leaked = sorted(ln for ln in secret_lines(run.submission_lines) if ln in blob)
    assert not leaked, f"{case}: hidden test or reference lines in results.json: {leaked[:5]}"
    for word in spec.absent:
        word = word.format(token=run.token, secret=run.secret)
        assert word not in blob, f"{case}: results.json contains {word!r}"
    # the attack's tell-tale messages
    joined = "\n".join(run.outputs())
    for pattern in spec.contains:
        assert re.search(pattern, joined), f"{case}: no output matches {pattern!r}:\n{joined[:3000]}"
    # the score
    failing = {t["name"]: t["output"][:300] for t in data["tests"] if t["status"] != "passed"}
    if spec.expect == "zero":
        passing = [t["name"] for t in data["tests"] if t["status"] == "passed"]
        assert run.score == 0 and not passing, f"{case}: a hostile stub earned {run.score}: {passing}"
    elif spec.expect == "full":
        assert run.score == run.max_score, f"{case}: a correct solution lost points: {failing}"
    elif spec.expect == "partial":
        assert run.score < run.max_score, f"{case}: the sabotage went unnoticed (full marks)"
    elif spec.expect.startswith("no_more_than:"):
        other = corpus.graded(spec.expect.split(":", 1)[1])
        assert run.score <= other.score, (f"{case}: the attack raised the score from {other.score} "
                                          f"to {run.score}")
    else:
        raise AssertionError(f"unknown expectation {spec.expect!r}")


def grade_and_check(case: str, corpus: Corpus, tmp_path_factory) -> Run:
    """Grade ``case`` with ``corpus``'s grading and check everything a run must show."""
    spec = CASES[case]
    before = tree_hash(REFERENCE, SOLUTION, ROOT / "autograder" / "sandbox") if spec.tamper else None
    autograder_results_before = snapshot("/autograder/results/results.json")
    run = corpus.grade(case)
    try:
        check_run(run, spec, corpus)
        if spec.tamper:
            assert tree_hash(REFERENCE, SOLUTION, ROOT / "autograder" / "sandbox") == before, \
                f"{case}: the kit's files changed"
            assert not files_containing(run.token), f"{case}: the attack wrote into the kit: " \
                                                    f"{files_containing(run.token)}"
        assert snapshot("/autograder/results/results.json") == autograder_results_before, \
            f"{case}: /autograder/results/results.json was written by the worker"
        for pattern in spec.ran:
            assert Path(pattern.format(token=run.token)).exists(), \
                f"{case}: the attack did not run (no {pattern}); the case proves nothing"
        for pattern in spec.not_ran:
            assert not Path(pattern.format(token=run.token)).exists(), \
                f"{case}: submission code outside the graded file ran ({pattern})"
        if spec.zip:
            base = tmp_path_factory.getbasetemp()
            escaped = [p for p in Path("/tmp").glob(f"*{run.token}*") if not p.name.startswith("ag-")]
            escaped += [p for p in base.rglob("*.py") if run.token in p.name or p.name == "evil.py"]
            assert not escaped, f"{case}: zip entries were written outside: {escaped}"
    finally:
        cleanup_tmp(run.token)
    return run
