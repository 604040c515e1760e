"""`python -m autograder scaffold` follows docs/ADDING_AN_EXERCISE.md literally.

The document's ``<!-- scaffold:files -->`` table is the list of files an exercise consists
of; the command must write exactly those (in the document's order), register the exercise as
opt-in, and leave a skeleton the release and the suites' collection accept. Run in a temporary
copy of the kit, never in the repository.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import scaffold

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ADDING_AN_EXERCISE.md"


def _doc_files() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- scaffold:files -->", 1)[1].split("<!-- /scaffold:files -->", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\|\s*\d+\s*\|\s*`([^`]+)`", block, flags=re.M)]


def test_the_document_lists_what_the_scaffold_writes():
    assert _doc_files() == list(scaffold.FILES)
    text = DOC.read_text(encoding="utf-8")
    for path in scaffold.FILES:                        # every step's file is named in its step
        step = next(m for m in re.finditer(rf"^\|\s*(\d+)\s*\|\s*`{re.escape(path)}`", text, re.M))
        assert f"### {step.group(1)}." in text, path


def _run(tmp: Path, *code_or_args: str, module: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tmp), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "autograder", *code_or_args] if module else [sys.executable, "-c", code_or_args[0]]
    return subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def kit_copy(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("scaffold")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "BUILD_INFO.json", "public_worth.json")
    for top in ("autograder", "reference", "docs"):
        shutil.copytree(ROOT / top, tmp / top, ignore=ignore)
    done = _run(tmp, "scaffold", "ex9_demo_topic", "--module", "demo", "--names", "alpha,Beta",
                "--root", str(tmp))
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp


def test_the_scaffold_writes_the_documented_skeleton(kit_copy):
    for rel in scaffold.paths("ex9_demo_topic", "demo"):
        path = kit_copy / rel
        assert path.is_file(), rel
        assert "TODO" in path.read_text(encoding="utf-8"), rel
    written = {p.relative_to(kit_copy).as_posix() for p in kit_copy.rglob("*") if p.is_file()
               and ("ex9" in p.as_posix() or "demo" in p.name)}
    assert written == set(scaffold.paths("ex9_demo_topic", "demo"))


def test_the_new_exercise_is_registered_opt_in(kit_copy):
    done = _run(kit_copy, "from autograder import contract as c; ex = c.BY_ID['ex9']; "
                "print(repr((ex.folder, ex.module, ex.names, ex.default, [e.id for e in c.DEFAULT], "
                "[e.id for e in c.select('all')])))", module=False)
    assert done.returncode == 0, done.stderr
    from autograder import contract
    folder, module, names, default, default_ids, all_ids = eval(done.stdout)
    assert (folder, module, names, default) == ("ex9_demo_topic", "demo", ("alpha", "Beta"), False)
    assert default_ids == [ex.id for ex in contract.DEFAULT]           # the default assignment is unchanged
    assert all_ids == [ex.id for ex in contract.EXERCISES] + ["ex9"]


def test_scaffold_twice_changes_nothing(kit_copy):
    contract = (kit_copy / "autograder" / "contract.py").read_text()
    readme = (kit_copy / "solutions" / "ex9_demo_topic" / "README.md")
    readme.write_text(readme.read_text() + "edited\n")
    done = _run(kit_copy, "scaffold", "ex9_demo_topic", "--module", "demo", "--root", str(kit_copy))
    assert done.returncode == 0, done.stderr
    assert (kit_copy / "autograder" / "contract.py").read_text() == contract
    assert readme.read_text().endswith("edited\n")


def test_the_skeleton_releases_and_its_suite_collects(kit_copy):
    code = ("import sys; from pathlib import Path\n"
            "from autograder.packaging import release as rel\n"
            "r = rel.build_release(Path('.'), 'ex9')\n"
            "stub = r.files['ex9_demo_topic/demo.py']\n"
            "ns = {}; exec(compile(stub, 'demo.py', 'exec'), ns)\n"
            "for name in ('alpha', 'Beta'):\n"
            "    try: ns[name]()\n"
            "    except NotImplementedError: pass\n"
            "    else: sys.exit(name + ' does not raise')\n"
            "assert 'ex9_demo_topic/tests/test_public.py' in r.files, sorted(r.files)\n"
            "print('released', len(r.files))\n")
    done = _run(kit_copy, code, module=False)
    assert done.returncode == 0 and "released" in done.stdout, done.stdout + done.stderr
    collect = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              "-c", "autograder/suites/pytest.ini", "autograder/suites/ex9_demo_topic"],
                             cwd=kit_copy, env={**os.environ, "PYTHONPATH": str(kit_copy)},
                             capture_output=True, text=True, timeout=300)
    assert collect.returncode == 0, collect.stdout + collect.stderr
    assert "test_alpha_values" in collect.stdout and "test_public_alpha" in collect.stdout


def test_bad_names_are_refused(tmp_path):
    with pytest.raises(ValueError, match="ex7_topic"):
        scaffold.scaffold(tmp_path, "seven", "m", "T", ["f"])
    with pytest.raises(ValueError, match="not Python names"):
        scaffold.scaffold(tmp_path, "ex7_x", "my-module", "T", ["f"])
