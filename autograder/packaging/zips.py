"""What every export shares: deterministic zips, unpacking them, the build-info file, the error.

The lowest layer of :mod:`autograder.packaging`: it imports nothing of the kit, and
``build``, ``exports/*`` and ``verify/*`` import it (never
each other in a circle).

Every zip is deterministic (:func:`write_zip`): sorted entries, fixed timestamps, fixed modes,
no caches or bytecode, so building twice from the same tree gives identical bytes.
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

ZIP_DATE = (1980, 1, 1, 0, 0, 0)
BUILD_INFO = "BUILD_INFO.json"                  # inside the Gradescope zip's autograder/ package


class BuildError(RuntimeError):
    """The Gradescope zip cannot be built, unpacked or proved as asked."""


def write_zip(path: Path, entries: dict[str, tuple[bytes, int] | bytes]) -> Path:
    """A deterministic zip: sorted entries, fixed timestamps and modes; written atomically.

    ``entries``: ``{path in the zip: bytes or (bytes, Unix mode)}`` (mode 0o644 when not given).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with zipfile.ZipFile(tmp, "w") as archive:
        for name in sorted(entries):
            data, mode = entries[name] if isinstance(entries[name], tuple) else (entries[name], 0o644)
            if "__pycache__" in name.split("/") or name.endswith((".pyc", ".pyo")):
                continue
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3                            # Unix: the mode below applies
            info.external_attr = (0o100000 | mode) << 16      # regular file
            archive.writestr(info, data, compresslevel=9)
    tmp.replace(path)
    return path


def unpack(zip_path: Path, target: Path) -> None:
    """Unzip keeping the Unix modes stored in the zip (``zipfile`` alone drops them)."""
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            dest = target / info.filename
            if not dest.resolve().is_relative_to(target.resolve()):
                raise BuildError(f"{zip_path}: unsafe path {info.filename!r}")
            archive.extract(info, target)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(dest, mode)
