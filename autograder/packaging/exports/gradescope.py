"""Gradescope export: ``dist/autograder.zip``.

Layout of the zip (Gradescope unzips it into ``/autograder/source``)::

    setup.sh              image set-up (Ubuntu 22.04): Python venv outside /autograder,
                          CPU-only torch (PyTorch's CPU index, or the index / wheel folder
                          named by `build --torch-index/--torch-find-links` or at image build
                          by AUTOGRADER_TORCH_INDEX/AUTOGRADER_TORCH_FIND_LINKS), then requirements.txt
    run_autograder        per submission: `python -m autograder grade` from /autograder/source
                          (the same code path as `grade`), with a zero-score fallback
    requirements.txt      exact pins of what grading imports (templates/grading_requirements.txt) and
                          everything they need, as installed where the build ran
    autograder/           the kit: engine, support, diagnosis, the chosen exercises' suites
    autograder/BUILD_INFO.json   build id, exercises, their point totals (read by contract.py)
    autograder/SEED_SECRET       the hidden inputs' secret (autograder/seeds.py): fresh and random
                          per build unless `build --seed-secret HEX` pins it; unreadable to the
                          worker like the rest of autograder/
    reference/            the oracle

Run from ``/autograder/source``, ``python -m autograder`` imports this copy: the current
folder comes first on ``sys.path``, before any installed copy of the kit (an editable
install's finder is consulted last). ``run_autograder`` prints which copy ran and its build id.

:mod:`autograder.packaging.verify.simulate` proves a built zip by running it the way Gradescope does.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import autograder
from autograder import contract, seeds
from autograder.packaging.zips import BUILD_INFO, BuildError, write_zip

TEMPLATES = Path(__file__).with_name("templates")
VENV = "/opt/attention-autograder/venv"          # on Gradescope, outside /autograder
TIME_LIMIT_S = 480                              # run_autograder's own limit (Gradescope: 600 s)
START_MARGIN_S = 30                             # the grader's start-up and the last results.json


def exercise_budget(count: int) -> float:
    """The time budget of each exercise in a build of ``count`` exercises: the default, or less
    when every exercise spending its budget and its import time limit would not fit in
    ``TIME_LIMIT_S`` (six exercises: 55 s each), so the last exercise is graded too."""
    from autograder.budget import DEFAULT_BUDGET_S
    from autograder.sandbox.limits import DEFAULT_CALL_TIMEOUT
    fits = (TIME_LIMIT_S - START_MARGIN_S) / max(count, 1) - DEFAULT_CALL_TIMEOUT
    return float(max(5, min(DEFAULT_BUDGET_S, int(fits))))
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".mypy_cache",
                       ".ruff_cache", ".hypothesis"})
SKIP_SUFFIXES = (".pyc", ".pyo", ".orig", ".rej", ".swp")


# --------------------------------------------------------------------------- requirements


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_roots() -> list[str]:
    """The packages grading imports (``templates/grading_requirements.txt``)."""
    lines = (TEMPLATES / "grading_requirements.txt").read_text().splitlines()
    return [ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()]


def grading_requirements(roots: Iterable[str] | None = None) -> dict[str, str]:
    """``{distribution name: installed version}`` for ``roots`` and all they need, here.

    Markers are evaluated for this interpreter and platform (no extras): the pins are for
    the same Python minor version, which ``setup.sh`` installs.
    """
    import importlib.metadata as md

    from packaging.requirements import Requirement

    pins: dict[str, str] = {}
    todo = list(roots if roots is not None else requirement_roots())
    while todo:
        req = Requirement(todo.pop())
        key = _canonical(req.name)
        if key in {_canonical(n) for n in pins}:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            raise BuildError(f"{req.name} is needed for grading but not installed here; "
                             "build from the kit's environment (make install)") from None
        pins[dist.metadata["Name"]] = dist.version
        for spec in dist.requires or []:
            dep = Requirement(spec)
            if dep.marker is None or dep.marker.evaluate({"extra": ""}):
                todo.append(str(dep))
    return dict(sorted(pins.items(), key=lambda kv: _canonical(kv[0])))


def requirements_txt(pins: dict[str, str]) -> str:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    lines = ["# Exact versions the kit was built and tested with (Python " + py + ", "
             + sys.platform + "). Generated by `python -m autograder build`.",
             f"# torch is the CPU build; setup.sh installs it first (from {TORCH_CPU_INDEX} unless told otherwise).",
             "# Grading imports: " + ", ".join(requirement_roots()) + " (the rest is what they need).",
             ""]
    lines += [f"{name}=={version}" for name, version in pins.items()]
    return "\n".join(lines) + "\n"


def _torch_version(pins: dict[str, str]) -> str:
    version = next((v for n, v in pins.items() if _canonical(n) == "torch"), None)
    if version is None:
        raise BuildError("torch is not among the grading requirements")
    return version


def _pip_version() -> str:
    import importlib.metadata as md
    try:
        return md.version("pip")
    except md.PackageNotFoundError:
        return "24.0"


# --------------------------------------------------------------------------- templates


def render(template: str, **values: str) -> str:
    """``templates/<template>`` with every ``@@KEY@@`` replaced; unknown keys are an error."""
    text = (TEMPLATES / template).read_text()
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", str(value))
    left = sorted(set(re.findall(r"@@([A-Z_]+)@@", text)))
    if left:
        raise BuildError(f"templates/{template}: no value for {', '.join(left)}")
    return text


# --------------------------------------------------------------------------- contents


def _files_under(folder: Path) -> Iterable[Path]:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and not path.name.endswith(SKIP_SUFFIXES) \
                and path.name not in (BUILD_INFO, seeds.SECRET_FILE.name):    # the build writes its own
            yield path


def kit_files(root: Path, exercises: Iterable[contract.Exercise]) -> dict[str, Path]:
    """``{path in the zip: file}`` for the kit package and the reference.

    Hidden suites are included only for ``exercises``; everything else in ``suites/`` (shared
    helpers, ``pytest.ini``) and the whole engine, support and diagnosis code are included.
    """
    chosen = {ex.folder for ex in exercises}
    others = {ex.folder for ex in contract.EXERCISES} - chosen
    files: dict[str, Path] = {}
    for package in ("autograder", "reference"):
        base = root / package
        if not (base / "__init__.py").is_file():
            raise BuildError(f"{base} is not a Python package")
        for path in _files_under(base):
            rel = path.relative_to(root)
            if package == "autograder" and rel.parts[1:2] == ("suites",) and len(rel.parts) > 3 \
                    and rel.parts[2] in others:
                continue
            files[rel.as_posix()] = path
    return files


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@dataclass
class GradescopeBuild:
    """What goes into ``autograder.zip``: ``{path in zip: (bytes, mode)}`` and its facts."""
    entries: dict[str, tuple[bytes, int]]
    info: dict
    exercises: tuple[contract.Exercise, ...]
    pins: dict[str, str] = field(default_factory=dict)


def totals(exercises: Iterable[contract.Exercise], points: dict[str, float] | None) -> dict[str, float]:
    points = dict(points or {})
    chosen = [ex.id for ex in exercises]
    unknown = sorted(set(points) - set(chosen))
    if unknown:
        raise BuildError(f"--points names exercises not in the build: {', '.join(unknown)}")
    bad = sorted(k for k, v in points.items() if not (v > 0))
    if bad:
        raise BuildError(f"--points must be positive: {', '.join(bad)}")
    return {ex.id: float(points.get(ex.id, ex.points)) for ex in exercises}


def _baked(option: str, value: str | None) -> str:
    """``value`` checked for being written inside double quotes in ``setup.sh``."""
    value = (value or "").strip()
    if re.search(r'["$`\\\s]', value):
        raise BuildError(f"{option}: no quotes, '$', backquotes, backslashes or spaces, please: {value!r}")
    return value


def plan(root: Path, exercises: tuple[contract.Exercise, ...],
         points: dict[str, float] | None = None, torch_index: str | None = None,
         torch_find_links: str | None = None, seed_secret: str | None = None,
         seed_secret_pinned: bool | None = None) -> GradescopeBuild:
    """Everything ``autograder.zip`` will hold, in memory.

    ``seed_secret``: the hidden inputs' secret, hex (``build --seed-secret``); default: a
    fresh random one, so two builds differ in ``autograder/SEED_SECRET`` only.

    ``torch_index`` / ``torch_find_links``: where ``setup.sh`` takes torch from by default
    (``build --torch-index`` / ``--torch-find-links``; see the rules at the top of setup.sh).
    """
    pins = grading_requirements()
    torch_version = _torch_version(pins)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    ids = ",".join(ex.id for ex in exercises)
    entries: dict[str, tuple[bytes, int]] = {}
    for arc, path in kit_files(root, exercises).items():
        entries[arc] = (path.read_bytes(), 0o755 if os.access(path, os.X_OK) and path.suffix == ".sh" else 0o644)
    digest = hashlib.sha256()
    for arc in sorted(entries):
        digest.update(arc.encode() + b"\0" + entries[arc][0] + b"\0")
    info = {
        "kit_version": autograder.__version__,
        "exercises": [ex.id for ex in exercises],
        "points": totals(exercises, points),
        "python": python,
        "torch": torch_version,
        "source_commit": _git_commit(root),
    }
    digest.update(json.dumps(info, sort_keys=True).encode())
    info["build_id"] = digest.hexdigest()[:16]        # the kit's code and settings, not the secret
    secret = seed_secret.strip() if seed_secret else seeds.new_secret()
    try:
        seeds.parse_secret(secret)
    except ValueError as exc:
        raise BuildError(f"--seed-secret: {exc}") from None
    info["seed_secret_sha256"] = hashlib.sha256(bytes.fromhex(secret)).hexdigest()[:16]   # which, never what
    # pinned (build --seed-secret): a rebuild draws the same hidden inputs (batch's report says so)
    info["seed_secret_pinned"] = bool(seed_secret) if seed_secret_pinned is None else bool(seed_secret_pinned)
    entries[f"autograder/{seeds.SECRET_FILE.name}"] = ((secret.lower() + "\n").encode(), 0o600)
    values = {"KIT_VERSION": f"attention-autograder {autograder.__version__}, build {info['build_id']}",
              "VENV": VENV}
    entries[f"autograder/{BUILD_INFO}"] = (
        (json.dumps(info, indent=1, sort_keys=True) + "\n").encode(), 0o644)
    entries["requirements.txt"] = (requirements_txt(pins).encode(), 0o644)
    entries["setup.sh"] = (render("setup.sh", PYTHON_VERSION=python, TORCH_VERSION=torch_version,
                                  PIP_VERSION=_pip_version(),
                                  TORCH_INDEX=_baked("--torch-index", torch_index),
                                  TORCH_FIND_LINKS=_baked("--torch-find-links", torch_find_links),
                                  **values).encode(), 0o755)
    entries["run_autograder"] = (render("run_autograder.sh", EXERCISES=ids, TIME_LIMIT=str(TIME_LIMIT_S),
                                        EXERCISE_BUDGET=f"{exercise_budget(len(exercises)):g}",
                                        **values).encode(), 0o755)
    return GradescopeBuild(entries=dict(sorted(entries.items())), info=info,
                           exercises=exercises, pins=pins)


def export(ctx) -> list[Path]:
    """Build step ``gradescope`` (see :mod:`autograder.packaging.build`)."""
    build = plan(ctx.root, ctx.exercises, ctx.points, getattr(ctx, "torch_index", ""),
                 getattr(ctx, "torch_find_links", ""), getattr(ctx, "seed_secret", "") or None,
                 getattr(ctx, "seed_secret_pinned", None))
    path = write_zip(ctx.out / "autograder.zip", build.entries)
    total = sum(build.info["points"].values())
    ctx.say(f"gradescope: {path}  ({path.stat().st_size / 1e6:.2f} MB, {len(build.entries)} files, "
            f"build {build.info['build_id']}, exercises {','.join(build.info['exercises'])}, "
            f"{total:g} points, python {build.info['python']}, torch {build.info['torch']})")
    return [path]
