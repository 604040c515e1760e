"""What ``batch`` uses besides its own module: grading one submission
(:mod:`~autograder.batching.runner`), which submissions a folder holds
(:mod:`~autograder.batching.discovery`), resuming (:mod:`~autograder.batching.resume`),
``--only`` (:mod:`~autograder.batching.selection`),
warm graders (:mod:`~autograder.batching.warm`, :mod:`~autograder.batching.pool`) and a Dask
cluster (:mod:`~autograder.batching.cluster`); here, how the batch takes SIGTERM/SIGHUP."""
from __future__ import annotations

import signal


def interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP stop the batch like Ctrl-C: its graders (each in its own session,
    out of reach of a signal to the batch's group) are stopped, not left running. (Moved from
    :mod:`autograder.batch` unchanged.)"""
    def interrupt(_sig: int, _frame: object) -> None:
        for name in names:                          # once: the clean-up must not be interrupted
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        raise KeyboardInterrupt
    names = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    for name in names:
        signal.signal(getattr(signal, name), interrupt)
