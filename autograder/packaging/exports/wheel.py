"""Build step ``wheel``: ``dist/attention_autograder-<version>-py3-none-any.whl``.

The kit as an installable package, for the machines that grade a class with ``batch
--scheduler`` (each Dask worker installs it) or anyone who wants ``pip install`` rather than a
checkout. It holds exactly the kit files of the Gradescope zip (:func:`gradescope.plan`: the
engine, support, diagnosis, the built exercises' suites with their ``pytest.ini``, and
``reference/``) and the same ``autograder/BUILD_INFO.json``, so the wheel and the zips of one
``build`` share one build id and grade alike. A worker that receives a submission checks that
build id against the TA's (:mod:`autograder.batching.cluster`).

The wheel is written directly (it is a zip with a ``.dist-info`` folder, PEP 427): no build
backend runs, and :func:`autograder.packaging.zips.write_zip` makes it deterministic. The
metadata (name, dependencies, extras, the console script) comes from ``pyproject.toml``, the
one place they are declared.
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import autograder
from autograder.packaging.zips import BuildError, write_zip

DIST_NAME = "attention_autograder"


def _pyproject(root: Path) -> dict:
    try:
        import tomllib
    except ImportError:                                   # Python 3.10
        try:
            import tomli as tomllib                       # type: ignore[no-redef]
        except ImportError:
            raise BuildError("building the wheel needs Python 3.11+ (tomllib) or tomli") from None
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"pyproject.toml could not be read: {exc}") from None


def metadata(root: Path) -> str:
    """The wheel's ``METADATA`` (core metadata 2.1) from ``pyproject.toml``."""
    project = _pyproject(root).get("project", {})
    lines = ["Metadata-Version: 2.1", f"Name: {project.get('name', 'attention-autograder')}",
             f"Version: {autograder.__version__}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {req}" for req in project.get("dependencies", [])]
    for extra, reqs in sorted(project.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {req}; extra == "{extra}"' for req in reqs]
    return "\n".join(lines) + "\n"


def entry_points(root: Path) -> str:
    scripts = _pyproject(root).get("project", {}).get("scripts", {})
    if not scripts:
        return ""
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(scripts.items()))


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_entries(kit: dict[str, tuple[bytes, int]], root: Path, build_id: str) -> dict[str, tuple[bytes, int]]:
    """``kit`` (``{path: (bytes, mode)}`` of ``autograder/`` and ``reference/``) plus the
    ``.dist-info`` files, RECORD last written."""
    info = f"{DIST_NAME}-{autograder.__version__}.dist-info"
    entries = dict(kit)
    entries[f"{info}/METADATA"] = (metadata(root).encode(), 0o644)
    entries[f"{info}/WHEEL"] = (("Wheel-Version: 1.0\nGenerator: attention-autograder build "
                                 f"{build_id}\nRoot-Is-Purelib: true\nTag: py3-none-any\n").encode(), 0o644)
    entries[f"{info}/top_level.txt"] = (b"autograder\nreference\n", 0o644)
    points = entry_points(root)
    if points:
        entries[f"{info}/entry_points.txt"] = (points.encode(), 0o644)
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, (data, _) in sorted(entries.items()))
    entries[f"{info}/RECORD"] = ((record + f"{info}/RECORD,,\n").encode(), 0o644)
    return entries


def wheel_name() -> str:
    return f"{DIST_NAME}-{autograder.__version__}-py3-none-any.whl"


def export(ctx) -> list[Path]:
    """Build step ``wheel`` (see :mod:`autograder.packaging.build`): the Gradescope build's
    kit files and ``BUILD_INFO.json``, as a wheel."""
    from autograder.packaging.exports.gradescope import plan

    build = plan(ctx.root, ctx.exercises, ctx.points, getattr(ctx, "torch_index", ""),
                 getattr(ctx, "torch_find_links", ""), getattr(ctx, "seed_secret", "") or None,
                 getattr(ctx, "seed_secret_pinned", None))
    kit = {name: value for name, value in build.entries.items()
           if re.match(r"(autograder|reference)/", name)}
    if "autograder/suites/pytest.ini" not in kit:
        raise BuildError("the kit has no autograder/suites/pytest.ini: the suites could not run")
    path = write_zip(ctx.out / wheel_name(), wheel_entries(kit, ctx.root, build.info["build_id"]))
    ctx.say(f"wheel: {path}  ({path.stat().st_size / 1e6:.2f} MB, build {build.info['build_id']}; "
            "install it on each grading machine: pip install <wheel>)")
    return [path]
