"""Worker side: notice a student file reaching into the kit, and tell the grader.

A worker holds one exercise's student file next to the kit's own helpers (the support
snapshot, the probes, the wire encoder). Python cannot stop code in the same process from
finding those objects, but every way of *finding* them that does not go through a plain
attribute goes through an audited call: walking the garbage collector's lists, taking frames,
``ctypes``, importing the kit by name, rewriting a function's code or a type's attributes.
:class:`ReachInWatch` installs one audit hook (``sys.addaudithook``, which cannot be removed)
before any student code runs; when such an event is raised *from a student file*, it records
``(event, file, line)``. The worker sends the new records with its next reply
(``"reach"``), the grader keeps them per exercise and reports them to course staff (log and
``results.json`` ``extra_data``); scores are not changed by the report itself. What it
cannot see: plain attribute reads (``sys.modules[...]``), and a record erased before the
reply leaves the worker by code that first took the gc or frame route (which is recorded
in the same call, so erasing it means finding this object the same way).
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

# Events that find or rewrite objects the student was not handed. "object.__getattr__" is
# raised only for restricted attributes (frames of tracebacks and generators, f_back, ...).
WATCHED = frozenset({
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
    "object.__getattr__", "object.__setattr__", "object.__delattr__",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.addressof", "ctypes.cdata", "ctypes.PyObj_FromPtr",
    "function.__new__", "code.__new__", "import",
})
KIT_PREFIX = "autograder"          # importing the kit by name from a student file
MAX_RECORDS = 20
_KIT_DIR = str(Path(__file__).resolve().parents[1])      # the autograder package (no kit import here)


class ReachInWatch:
    """Records audited reach-ins made from the files in ``student_files``."""

    def __init__(self, student_files: set[str]):
        self._files = student_files          # the worker's live set: files loaded later count too
        self._records: list[list] = []
        self._sent = 0
        self._inside = threading.local()      # this thread is in the hook (per thread: another
                                                # thread's events are never skipped for it)
        self._getframe = sys._getframe       # captured before any student code runs

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if event not in WATCHED or getattr(self._inside, "busy", False) or len(self._records) >= MAX_RECORDS:
            return
        if event == "import" and not str(args[0] if args else "").startswith(KIT_PREFIX):
            return
        self._inside.busy = True                    # sys._getframe below raises an event itself
        try:
            where = self._student_frame()
            if where is not None:
                record = [event, *where]
                if record not in self._records:
                    self._records.append(record)
        finally:
            self._inside.busy = False

    def _student_frame(self) -> tuple[str, int] | None:
        """The student file and line that raised the event: the frame that made the call,
        or the one above it when the call went through a library (``inspect``, ``ctypes``)."""
        frame: Any = self._getframe(2)       # 0: here, 1: _hook, 2: the code that raised the event
        for _ in range(2):
            if frame is None:
                return None
            name = frame.f_code.co_filename
            if name in self._files:
                return name, frame.f_lineno
            if name.startswith(_KIT_DIR):    # the kit's own helpers (guards take frames)
                return None
            frame = frame.f_back
        return None

    def new_records(self) -> list[list]:
        """Records not yet sent (each is sent once)."""
        fresh = self._records[self._sent:]
        self._sent = len(self._records)
        return [list(r) for r in fresh]
