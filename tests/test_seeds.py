"""Hidden inputs nobody can predict (autograder/seeds.py): derivation, the secret, the build.

Observed before: fixed SEED constants in the suites gave byte-identical hidden inputs on
every run (a submission printed them in its exception messages, another returned gradients
from a table keyed by the inputs' hash), and the worker's torch.initial_seed() was the CRC32
of the calling test's node id. These tests grade a probe submission for real: it raises an
exception naming a hash of the hidden input it received and the worker's initial seed.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from autograder import grading, seeds
from autograder.packaging.exports import gradescope
from autograder.packaging.zips import BuildError
from helpers import ROOT, grade_folder, make_submission

SECRET_A, SECRET_B = "a1" * 32, "b2" * 32

PROBE = '''import hashlib
import numpy as np
import torch


def softmax(x, axis=-1):
    digest = hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:16]
    raise ValueError(f"probe input={digest} worker={torch.initial_seed()}")
'''


def _probe(tmp_path: Path, secret: str, comment: str = "") -> dict[str, tuple[str, str]]:
    """Test name -> (hash of the softmax input it sent, the worker's torch seed)."""
    folder = make_submission(tmp_path / f"{secret[:4]}{len(comment)}", {"attention.py": PROBE + comment})
    with seeds.secret_override(secret):
        results = grade_folder(folder, "ex1")
    seen = {}
    for t in results.tests:
        match = re.search(r"probe input=(\w+) worker=(\d+)", t.output)
        if match and t.visibility != "visible":
            seen[t.name] = match.groups()
    assert len(seen) >= 4, [t.output[:200] for t in results.tests]
    return seen


def test_hidden_inputs_depend_on_secret_and_submission_not_on_the_run(tmp_path):
    first = _probe(tmp_path, SECRET_A)
    assert _probe(tmp_path / "again", SECRET_A) == first            # regrading: the same inputs
    edited = _probe(tmp_path, SECRET_A, "\n# an edited comment\n")
    other_secret = _probe(tmp_path, SECRET_B)
    assert len({w for _, w in first.values()}) == len(first)         # each test its own worker seed,
    for name, (inputs, worker) in first.items():                    # not a function of its name alone
        assert edited[name][0] != inputs and other_secret[name][0] != inputs, name
        assert edited[name][1] != worker and other_secret[name][1] != worker, name


def test_derivation():
    s = seeds.Seeds(bytes.fromhex(SECRET_A), {"ex1": seeds.source_digest("x = 1\n")})
    base = s.derive("ex1", "ex1_attention/test_a.py::test_a")
    assert base == s.derive("ex1", "ex1_attention/test_a.py::test_a")
    assert 0 <= base < seeds.SEED_RANGE
    others = {s.derive("ex1", "ex1_attention/test_a.py::test_b"),
              s.derive("ex2", "ex1_attention/test_a.py::test_a"),
              s.derive("ex1", "ex1_attention/test_a.py::test_a", purpose="worker"),
              seeds.Seeds(bytes.fromhex(SECRET_B), s.digests).derive("ex1", "ex1_attention/test_a.py::test_a"),
              seeds.Seeds(s.secret, {"ex1": seeds.source_digest("x = 2\n")}).derive("ex1", "ex1_attention/test_a.py::test_a")}
    assert base not in others and len(others) == 5
    seeds.enter(s, "ex1", "ex1_attention/test_a.py::test_a")
    try:
        assert seeds.seed(0) == base and seeds.seed(3) == (base + 3) % seeds.SEED_RANGE
        assert seeds.rng(1).random() == seeds.rng(1).random() != seeds.rng(2).random()
        assert seeds.seed(name="state") == s.derive("ex1", "state")
    finally:
        seeds.leave()
    with pytest.raises(RuntimeError):
        seeds.seed(0)


def test_a_checkout_makes_its_own_secret_once(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "SECRET_FILE", tmp_path / "SEED_SECRET")
    secret, origin = seeds.load_secret()
    assert origin == "created" and len(secret) == seeds.SECRET_BYTES
    assert (tmp_path / "SEED_SECRET").stat().st_mode & 0o077 == 0
    assert seeds.load_secret() == (secret, "file")
    with seeds.secret_override(SECRET_B):
        assert seeds.load_secret() == (bytes.fromhex(SECRET_B), "override")
    monkeypatch.setattr(seeds, "SECRET_FILE", tmp_path / "no such folder" / "SEED_SECRET")
    assert seeds.load_secret() == (seeds.FALLBACK_SECRET, "fallback")


def test_the_secret_file_is_in_a_folder_hidden_from_the_worker():
    """``harden.py`` locks, and the namespaces level hides, every folder of kit_folders()."""
    hidden = [Path(f) for f in grading.kit_folders()]
    assert any(seeds.SECRET_FILE.resolve().is_relative_to(f) for f in hidden), hidden


def test_bad_secrets_are_refused():
    for bad in ("not hex", "ab" * 8):
        with pytest.raises(ValueError):
            seeds.parse_secret(bad)


@pytest.fixture(scope="module")
def plans():
    from autograder import contract
    one = contract.select("ex1")
    return (gradescope.plan(ROOT, one, seed_secret=SECRET_A), gradescope.plan(ROOT, one, seed_secret=SECRET_A),
            gradescope.plan(ROOT, one), gradescope.plan(ROOT, one))


def test_the_zip_holds_the_secret_pinned_or_fresh(plans):
    pinned, again, fresh, fresh2 = plans
    name = "autograder/SEED_SECRET"
    assert pinned.entries[name][0].decode().strip() == SECRET_A
    assert pinned.entries == again.entries                          # pinned: byte-identical
    assert fresh.entries[name] != fresh2.entries[name] != pinned.entries[name]
    differ = {k for k in fresh.entries if fresh.entries[k] != fresh2.entries[k]}
    assert differ == {name, "autograder/BUILD_INFO.json"}
    assert pinned.info["build_id"] == fresh.info["build_id"]        # the code's id, not the secret's
    assert pinned.info["seed_secret_sha256"] == hashlib.sha256(bytes.fromhex(SECRET_A)).hexdigest()[:16]
    assert SECRET_A not in pinned.entries["autograder/BUILD_INFO.json"][0].decode()
    assert pinned.info["seed_secret_pinned"] is True and fresh.info["seed_secret_pinned"] is False


def test_a_checkouts_secret_is_never_shipped(tmp_path):
    root = tmp_path / "root"
    (root / "autograder").mkdir(parents=True)
    (root / "autograder" / "__init__.py").write_text("")
    (root / "autograder" / "SEED_SECRET").write_text(SECRET_B)
    (root / "reference").mkdir()
    (root / "reference" / "__init__.py").write_text("")
    assert "autograder/SEED_SECRET" not in gradescope.kit_files(root, ())
    with pytest.raises(BuildError, match="seed-secret"):
        gradescope.plan(ROOT, (), seed_secret="12")


def test_concurrent_graders_agree_on_a_new_checkout_secret(tmp_path):
    """batch starts several graders at once on a fresh checkout: they all read one secret."""
    import subprocess
    import sys
    code = ("import sys; from pathlib import Path; from autograder import seeds; "
            "seeds.SECRET_FILE = Path(sys.argv[1]); s, o = seeds.load_secret(); print(s.hex(), o)")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "SEED_SECRET")],
                              stdout=subprocess.PIPE, text=True) for _ in range(6)]
    outs = [p.communicate(timeout=60)[0].split() for p in procs]
    assert len({secret for secret, _ in outs}) == 1, outs
    assert all(origin in ("created", "file") for _, origin in outs), outs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SEED_SECRET"]      # no leftovers


def test_a_fresh_checkouts_build_id_is_the_same_before_and_after_its_first_grading(tmp_path):
    """The build id (``batching.resume``: resumed batches, a Dask cluster's check that its
    workers run the batch's kit) digests the checkout, whose secret is made on first use. A
    process that computed it before any grading made the secret (a batch's start) must agree
    with one that computes it after (a Dask worker started later): seen in CI as "2 worker(s)
    run another build of the kit than this one"."""
    import shutil
    import subprocess
    import sys
    kit = tmp_path / "checkout"
    for name in ("autograder", "reference"):
        shutil.copytree(ROOT / name, kit / name, ignore=shutil.ignore_patterns("__pycache__", "SEED_SECRET"))

    def run(code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(kit)},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    build_id = "from autograder.batching import resume; print(resume.build_id())"
    before = run(build_id)
    run("from autograder import seeds; seeds.load_secret()")       # a grading reads (or makes) it
    assert (kit / "autograder" / "SEED_SECRET").is_file()
    assert run(build_id) == before
