"""The Docker replica's image, built in the background from the start of a test run.

``test_replica_grades_like_gradescope`` needs the image of ``autograder.zip`` (a Debian root
from debootstrap, ``setup.sh``'s environment, the kit's steps). On a fresh machine that build
is several minutes spent mostly waiting on Debian's archive and pip, and a test process that
waited for it left one of the two cores idle all that time. So the run's first process starts
the build as soon as it knows the test was collected (``tests/conftest.py``), in a process of
its own; :mod:`scheduling` hands the replica's file out last, and the test waits for the build
(:func:`wait`) before it runs the replica, which then finds the image built from the same zip
(same bytes: the secret is pinned and builds are reproducible) and reuses it. Everything the
test proves still runs in the test: every submission graded in fresh containers, and a zip
whose image is missing (a failed prefetch) is built there again, its error shown.

Run as a script, it is that background build: ``python tests/replica_prefetch.py FOLDER``.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE = "tests/test_replica.py::test_replica_grades_like_gradescope"
FOLDER = "replica-prefetch"                      # under the run's shared temporary folder
SECRET = "5eed" * 16                             # pinned: the image cache is keyed by the zip's sha256


def replica_zip(out: Path) -> Path:
    """``autograder.zip`` of every registered exercise (the opt-in ex6 too), as the test grades it."""
    # imported here: tests/conftest.py imports this module before it forks the run's zygote
    from autograder import contract
    from autograder.packaging.build import BuildContext, build
    ctx = build(BuildContext(root=ROOT, out=out, exercises=contract.EXERCISES, say=lambda _m: None,
                             seed_secret=SECRET), only=["gradescope"])
    return ctx.artifacts["gradescope"][0]


def start(folder: Path) -> None:
    """Start the background build into ``folder`` (once; it holds ``folder/lock`` until done)."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = open(folder / "lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)       # taken: a build is already under way
    except OSError:
        lock.close()
        return
    with open(folder / "prefetch.log", "w") as log:
        # the child inherits the locked file description: the lock lasts until the build ends
        subprocess.Popen([sys.executable, __file__, str(folder)], stdin=subprocess.DEVNULL, stdout=log,
                         stderr=subprocess.STDOUT, pass_fds=(lock.fileno(),), start_new_session=True,
                         cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    lock.close()


def wait(folder: Path) -> str:
    """Wait for a background build into ``folder`` to end; what it printed ("" if none ran)."""
    if not (folder / "lock").exists():
        return ""
    with open(folder / "lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
    return (folder / "prefetch.log").read_text(encoding="utf-8", errors="replace")


def _main(folder: Path) -> int:
    from autograder.packaging.verify import replica
    ok, why = replica.docker_available()
    if not ok:
        print(f"replica prefetch: Docker is unavailable ({why})")
        return 0
    zip_path = replica_zip(folder / "dist")
    replica.build_image(zip_path, log_dir=folder)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))                # the kit, for the background build
    sys.exit(_main(Path(sys.argv[1])))
