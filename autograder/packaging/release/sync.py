"""The release on disk: compare a generated release with ``assignments/`` (``--check``), write
what differs, and the summary ``python -m autograder release`` prints."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.packaging.release.model import Release

# The check runtime (``assignments/autograder/``) is a copy of the kit's own code: written into
# assignments/ and every release.zip, but not kept in git and not part of "assignments/ is up
# to date with solutions/" (it is regenerated from the kit on every release and build).
RUNTIME_DIR = "autograder/"
# Folders that may appear inside assignments/ as side effects of using it; never "stale".
IGNORED_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints", ".pytest_cache"})


def existing_files(out: Path) -> dict[str, bytes]:
    """Files under ``out`` (relative posix paths), ignoring caches and checkpoints."""
    if not out.is_dir():
        return {}
    found = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out)
        if path.is_file() and not IGNORED_DIRS.intersection(rel.parts[:-1]):
            found[rel.as_posix()] = path.read_bytes()
    return found


@dataclass
class Comparison:
    changed: list[str]
    missing: list[str]
    stale: list[str]

    @property
    def up_to_date(self) -> bool:
        return not (self.changed or self.missing or self.stale)


def is_runtime(path: str) -> bool:
    """Whether a release path belongs to the generated check runtime (see ``RUNTIME_DIR``)."""
    return path.startswith(RUNTIME_DIR)


def compare_release(release: Release, out: Path, runtime: bool = True) -> Comparison:
    """What differs between a generated release and a folder; ``runtime=False`` leaves the
    check runtime out (a fresh clone has none until the first ``release``)."""
    wanted, have = release.encoded(), existing_files(out)
    if not runtime:
        wanted = {p: d for p, d in wanted.items() if not is_runtime(p)}
        have = {p: d for p, d in have.items() if not is_runtime(p)}
    return Comparison(
        changed=sorted(p for p in wanted if p in have and have[p] != wanted[p]),
        missing=sorted(p for p in wanted if p not in have),
        stale=sorted(p for p in have if p not in wanted))


def write_release(release: Release, out: Path) -> Comparison:
    """Write what differs, delete stale files under ``out``; return what was done."""
    diff = compare_release(release, out)
    wanted = release.encoded()
    for rel in diff.changed + diff.missing:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(wanted[rel])
    for rel in diff.stale:
        (out / rel).unlink()
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return diff


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} kB"


def summary(release: Release, out_label: str) -> str:
    data = release.encoded()
    lines = [f"release: {len(release.jobs)} exercises -> {out_label}/"]
    for job in release.jobs:
        folder = job.exercise.folder
        lines.append(f"  {folder}/")
        order = [job.exercise.filename, f"{folder}.ipynb", "README.md"]
        for rel in sorted(job.files, key=lambda r: (order.index(r) if r in order else 9, r)):
            note = job.notes.get(rel, "public test" if rel in job.public else "")
            size = _size(len(data[f"{folder}/{rel}"]))
            lines.append(f"    {rel:<28} {size:>9}  {note}".rstrip())
        if not job.public:
            lines.append("    tests/                       (no public tests yet)")
    lines.append(f"  {'README.md':<30} {_size(len(data['README.md'])):>9}  overview")
    runtime = [p for p in data if p.startswith("autograder/")]
    if runtime:
        lines.append(f"  {'autograder/':<30} {_size(sum(len(data[p]) for p in runtime)):>9}  "
                     f"student runtime for `python -m autograder check` ({len(runtime)} files)")
    total = sum(len(b) for b in data.values())
    lines.append(f"  {len(data)} files, {_size(total)}")
    return "\n".join(lines)
