"""Leak scanning for the release: the solution-region lines of a notebook, and every marker
or solution line found in the files of a release (see :mod:`autograder.packaging.release.markers`)."""
from __future__ import annotations

import json
from typing import Iterable

from autograder.packaging.release.markers import BEGIN, END, MarkerError, find_regions, leaked_lines
from autograder.packaging.release.model import ReleaseError, Secret

# Markers that must never reach a student (nbgrader's hidden-test markers included).
FORBIDDEN_MARKERS = (BEGIN, END, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def notebook_secret(nb, origin: str) -> Secret:
    """The solution-region lines of a notebook, and the lines its cells keep."""
    lines: list[str] = []
    kept: set[str] = set()
    for index, cell in enumerate(nb.cells):
        source = cell.source
        try:
            regions = find_regions(source, f"{origin} (cell {index})")
        except MarkerError as exc:
            raise ReleaseError(str(exc)) from None
        inside = {i for b, e, _ in regions for i in range(b, e + 1)}
        for i, line in enumerate(source.splitlines(), start=1):
            (lines.append if i in inside else kept.add)(line.strip())
        if not regions and cell.metadata.get("nbgrader", {}).get("solution"):
            lines.extend(line.strip() for line in source.splitlines())   # whole-cell solution
    return Secret(origin, lines, kept)



def scannable_text(path: str, text: str) -> str:
    """The text a reader sees: a notebook's cell sources, any other file as is."""
    if path.endswith(".ipynb"):
        cells = json.loads(text).get("cells", [])
        return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in cells)
    return text


def find_leaks(files: dict[str, str], secrets: Iterable[Secret],
               skip: Iterable[str] = ()) -> list[str]:
    """``"path: problem"`` for every marker or solution line found in ``files``.

    Files in ``skip`` (copied public tests) are checked for markers only.
    """
    skip = set(skip)
    secrets = list(secrets)
    problems: list[str] = []
    for path, text in sorted(files.items()):
        seen = scannable_text(path, text)
        for marker in FORBIDDEN_MARKERS:
            if marker in seen:
                problems.append(f"{path}: contains the marker {marker!r}")
        if path in skip:
            continue
        for secret in secrets:
            for line in leaked_lines(seen, secret.lines, secret.allowed):
                problems.append(f"{path}: solution line from {secret.origin}: {line!r}")
    return problems
