"""Which submissions a class folder holds (``batch``): one sub-folder or ``.zip`` per student, or
Gradescope's "Export Submissions" folder (``submission_metadata.yml`` plus one
``submission_<id>/`` folder per submission; names and emails from the metadata when PyYAML is
installed, else the folder names). A group submission keeps each member (:class:`Member`: the
gradebook gives each their own row) and the metadata's ``created_at`` (the late policy's
submission time, :mod:`autograder.staff.late`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograder import filetree, textsafe

METADATA = "submission_metadata.yml"
# The class folder's own listing (one level: each submission is walked by its staging copy).
CLASS_BOUNDS = filetree.Bounds(depth=1, entries=100_000, bytes=None)


@dataclass(frozen=True)
class Member:
    """One person behind a submission (a group submission has several)."""
    name: str
    email: str = ""
    sid: str = ""


@dataclass
class Entry:
    """One student's submission (or one group's)."""
    student: str                  # display name (metadata name, else folder / zip name); a group: "A & B"
    key: str                      # unique, file-system-safe: results/<key>/
    path: Path
    email: str = ""               # a group: the members' emails joined by "; "
    sid: str = ""
    members: list[Member] = field(default_factory=list)   # who submitted it ([]: the student alone)
    created_at: str = ""          # Gradescope's `:created_at:` (ISO 8601), "" when the metadata has none

    def people(self) -> list[Member]:
        """Each person this submission's grade goes to (at least one)."""
        return list(self.members) or [Member(self.student, self.email, self.sid)]


@dataclass
class Discovery:
    entries: list[Entry]
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gradescope: bool = False


# --------------------------------------------------------------------------- discovery

def discover(folder: Path) -> Discovery:
    """The submissions in ``folder``: sub-folders and zips, or a Gradescope export. Raises
    ``FileNotFoundError`` when it is not a folder, ``filetree.TooLarge`` past
    :data:`CLASS_BOUNDS`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    children = [folder / e.name for e in filetree.walk(folder, CLASS_BOUNDS, follow_root=True)
                if not e.name.startswith((".", "__"))]
    if not (folder / METADATA).is_file():                 # the export one level down?
        inner = [c for c in children if c.is_dir() and (c / METADATA).is_file()]
        if len(children) == 1 and inner:
            return discover(inner[0])
    if (folder / METADATA).is_file():
        return _gradescope(folder, children)
    found = Discovery(entries=[])
    for child in children:
        if child.is_dir() or (child.is_file() and child.suffix.lower() == ".zip"):
            name = textsafe.name(child.name if child.is_dir() else child.stem)   # any bytes: escaped
            found.entries.append(Entry(student=name, key=name, path=child))
        else:
            found.ignored.append(textsafe.name(child.name))
    _unique_keys(found.entries)
    return found


def _gradescope(folder: Path, children: list[Path]) -> Discovery:
    found = Discovery(entries=[], gradescope=True)
    metadata, note = read_metadata(folder / METADATA)
    if note:
        found.notes.append(note)
    for child in children:
        if child.name == METADATA:
            continue
        if not child.is_dir() or not child.name.startswith("submission_"):
            found.ignored.append(textsafe.name(child.name))
            continue
        record = metadata.get(child.name)
        people = _submitters(record)
        names = " & ".join(p["name"] for p in people if p["name"])
        found.entries.append(Entry(
            student=names or textsafe.name(child.name), key=textsafe.name(child.name), path=child,
            email="; ".join(p["email"] for p in people if p["email"]),
            sid="; ".join(p["sid"] for p in people if p["sid"]),
            members=[Member(p["name"] or p["email"] or p["sid"] or textsafe.name(child.name), p["email"], p["sid"])
                     for p in people],
            created_at=_created_at(record)))
    _unique_keys(found.entries)
    return found


def read_metadata(path: Path) -> tuple[dict, str | None]:
    """Gradescope's ``submission_metadata.yml`` as a dict (empty, with a note, without PyYAML)."""
    try:
        import yaml
    except ImportError:
        return {}, "PyYAML is not installed: students are named by their submission folders"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except Exception as exc:  # noqa: BLE001 - a damaged file costs the names only
        return {}, f"{path.name} could not be read ({type(exc).__name__}): folder names used"
    return (data if isinstance(data, dict) else {}), None


def _submitters(record) -> list[dict[str, str]]:
    """``[{"name", "email", "sid"}]`` from one metadata record (keys with or without ':')."""
    if not isinstance(record, dict):
        return []
    record = {str(k).lstrip(":"): v for k, v in record.items()}
    people = record.get("submitters") or []
    out = []
    for person in people if isinstance(people, list) else []:
        if isinstance(person, dict):
            person = {str(k).lstrip(":"): v for k, v in person.items()}
            out.append({k: str(person.get(k) or "").strip() for k in ("name", "email", "sid")})
    return out


def _created_at(record) -> str:
    """A metadata record's ``created_at`` as ISO 8601 ("" when absent). PyYAML reads
    Gradescope's ``2024-03-01 10:00:00.000000000 +00:00`` as a datetime; a string is kept as
    written (the late policy parses it)."""
    if not isinstance(record, dict):
        return ""
    value = {str(k).lstrip(":"): v for k, v in record.items()}.get("created_at")
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value).strip() if value is not None else ""


def _unique_keys(entries: list[Entry]) -> None:
    seen: dict[str, int] = {}
    for e in entries:
        base = re.sub(r"[^A-Za-z0-9._@+-]+", "_", e.key).strip("._") or "student"
        n = seen.get(base.lower(), 0)
        seen[base.lower()] = n + 1
        e.key = base if n == 0 else f"{base}_{n + 1}"
