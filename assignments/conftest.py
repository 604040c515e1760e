"""`pytest` in this release runs the public tests on your files (generated; do not edit).

The tests run through the same checker as `python check.py`: your file is loaded into a
separate worker process, with a time limit on every call. Run `pytest` here, in an
exercise folder (that exercise only), or `pytest ex1_attention` from here.
"""
import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from autograder.student_pytest import (pytest_configure, pytest_runtestloop,  # noqa: E402,F401
                                       pytest_unconfigure)
