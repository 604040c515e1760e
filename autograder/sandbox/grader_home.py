"""No dependence on the grader's HOME: config and caches in a folder anyone may read.

As root, the worker runs as another user. matplotlib fixes its config/cache folder when it is
imported (in the grader, before the fork): under ``HOME=/root`` (mode 0700) that folder is
unreadable to the worker and every plot fails. So, before matplotlib or torch is imported
(``autograder.sandbox`` calls this on import), their config and cache folders are pointed at
a root-owned folder anyone may read; ``python -m autograder.sandbox.harden`` builds
matplotlib's font cache in it once, at image build time.
"""
from __future__ import annotations

import os
import stat
import sys

HOME_VARS = ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TORCH_HOME")


def prepare_grader_home() -> str | None:
    """As root on Linux: matplotlib's/torch's config and caches in a root-owned folder anyone
    may read (``<venv>/var/autograder-home``, else a fresh temporary one); the folder, or None
    when not root (the worker is then the grader's own user and may read its HOME).

    Must run before matplotlib is imported: it fixes its config folder at import."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return None
    home = _runtime_home()
    for var, sub in zip(HOME_VARS, ("matplotlib", "cache", "config", "torch")):
        path = os.path.join(home, sub)
        os.makedirs(path, 0o755, exist_ok=True)
        os.environ[var] = path
    return home


def _runtime_home() -> str:
    preferred = os.path.join(sys.prefix, "var", "autograder-home")
    try:
        os.makedirs(preferred, 0o755, exist_ok=True)
        info = os.lstat(preferred)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o022:
            os.chmod(preferred, 0o755)
            return preferred
    except OSError:
        pass
    import tempfile
    fresh = tempfile.mkdtemp(prefix="autograder-home-")
    os.chmod(fresh, 0o755)
    return fresh
