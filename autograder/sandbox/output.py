"""The worker's stdout/stderr, drained in the grader and kept up to a limit.

Shared by both ways of starting a worker: forked from the zygote (session.py) and spawned as
a fresh interpreter (spawn.py).
"""
from __future__ import annotations

import os
import select
import threading

from autograder import textsafe

#: Where a pipe can be polled and read without blocking. On Windows the
#: collector reads blocking, and text() gives what the thread has read so far.
_POLLABLE = hasattr(select, "poll")
_CHUNK = 1 << 16
#: What text() reads itself at most (16 MB, far above any output limit): the pipe holds 64 kB
#: unless resized, so this is all that waits there, but a writer that never pauses refills it.
_TEXT_CHUNKS = 256


class OutputCollector(threading.Thread):
    """Drains the worker's stdout/stderr pipe, keeping the first ``limit`` bytes.

    Every read happens under one lock, on a non-blocking pipe (POSIX), so :meth:`text` can
    read what is waiting in the pipe itself: what the worker wrote before its last reply is
    in the text, however far behind the draining thread is (a loaded machine)."""

    def __init__(self, fd: int, limit: int):
        super().__init__(daemon=True)
        self.fd, self.limit = fd, limit
        self.kept = bytearray()
        self.total = 0
        self._lock = threading.Lock()
        self._eof = False               # the pipe's end was read (the fd is closed by run only)
        if _POLLABLE:
            os.set_blocking(fd, False)

    def run(self) -> None:
        try:
            if _POLLABLE:
                poller = select.poll()          # not select(): fds above 1023 are fine
                poller.register(self.fd, select.POLLIN)
            while not self._eof:
                if _POLLABLE:
                    poller.poll()
                    with self._lock:            # one chunk at a time: text() never waits long
                        self._read_waiting(chunks=1)
                else:
                    chunk = self._read_chunk()
                    with self._lock:
                        self._keep(chunk)
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._eof = True        # text() reads no more: the fd number may be reused
                os.close(self.fd)

    def _read_waiting(self, chunks: int) -> None:
        """Reads what the pipe holds now, at most ``chunks`` reads (lock held): a worker that
        writes without pause cannot keep the reader here."""
        for _ in range(chunks):
            if self._eof:
                return
            try:
                chunk = self._read_chunk()
            except BlockingIOError:
                return
            self._keep(chunk)

    def _read_chunk(self) -> bytes:
        return os.read(self.fd, _CHUNK)

    def _keep(self, chunk: bytes) -> None:
        if not chunk:
            self._eof = True
            return
        self.total += len(chunk)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    def text(self) -> str:
        """What was kept, made safe: undecodable bytes and control characters escaped
        (:func:`autograder.textsafe.text`), line breaks normalised."""
        with self._lock:
            if _POLLABLE:
                try:
                    self._read_waiting(chunks=_TEXT_CHUNKS)
                except OSError:
                    pass
            kept, total = bytes(self.kept), self.total
        out = textsafe.text(textsafe.from_bytes(kept))
        if total > self.limit:
            out += f"\n… ({total - self.limit} more bytes of output not shown)"
        return out
