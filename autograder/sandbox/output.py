"""The worker's stdout/stderr, drained in the grader and kept up to a limit.

Shared by both ways of starting a worker: forked from the zygote (session.py) and spawned as
a fresh interpreter (spawn.py).
"""
from __future__ import annotations

import os
import threading

from autograder import textsafe


class OutputCollector(threading.Thread):
    """Drains the worker's stdout/stderr pipe, keeping the first ``limit`` bytes."""

    def __init__(self, fd: int, limit: int):
        super().__init__(daemon=True)
        self.fd, self.limit = fd, limit
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        """What was kept, made safe: undecodable bytes and control characters escaped
        (:func:`autograder.textsafe.text`), line breaks normalised."""
        out = textsafe.text(textsafe.from_bytes(self.kept))
        if self.total > self.limit:
            out += f"\n… ({self.total - self.limit} more bytes of output not shown)"
        return out
