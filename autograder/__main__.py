"""``python -m autograder``: the grader imports nothing from the folder it was started in.

``python -m`` puts the working folder first on ``sys.path``; a submission that plants
``pytest.py`` (or ``numpy.py``, ``conftest.py`` …) in a world-writable working folder
would otherwise have it imported, as root, when the grader imports those modules after
student code ran. So the working folder, ``''`` and every relative entry leave
``sys.path``, and the kit's own parent folder is put there explicitly (under Gradescope
the kit *is* in the working folder, ``/autograder/source``, and stays importable).

This happens when this module is imported, before the command line (and ``argparse``) is:
the console script ``attention-autograder`` enters through :func:`console` here for the same
reason.
"""
import os
import sys


def _without_working_folder(path: list[str], cwd: str, kit_parent: str) -> list[str]:
    """``path`` minus ``''``, relative entries and the working folder, with ``kit_parent``
    first; order otherwise kept."""
    def real(entry: str) -> str:
        return os.path.realpath(entry)

    here = real(cwd)
    kept = [p for p in path if p and os.path.isabs(p) and real(p) != here and real(p) != kit_parent]
    return [kit_parent, *kept]


_KIT_PARENT = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    _CWD = os.getcwd()
except OSError:                        # the working folder was deleted: nothing to import from it
    _CWD = ""
sys.path[:] = _without_working_folder(sys.path, _CWD, _KIT_PARENT) if _CWD else \
    [_KIT_PARENT, *(p for p in sys.path if p and os.path.isabs(p))]


def main() -> int:
    """The command line, imported only now that ``sys.path`` is clean."""
    from autograder.cli import main as cli_main

    return int(cli_main() or 0)


def console() -> None:
    """The console script ``attention-autograder``: :func:`main`, then the process ends
    without the interpreter's teardown (:mod:`autograder.process_exit`)."""
    from autograder.process_exit import exit_process

    exit_process(main())


if __name__ == "__main__":
    console()
