"""The Docker replica's image, built early: ``python tests/replica_prebuild.py``.

Building the replica's images on a fresh machine (debootstrap, the environment's apt and pip
steps, ``docker commit``) takes minutes, mostly waiting on the network and the disk. The
replica test (``tests/test_replica.py``) used to start it only when its turn came, and its
test process then waited while the other one ran alone. ``tests/conftest.py`` starts this script
in the background as soon as the first test process has collected the replica test (when
Docker answers): it builds the very zip the test builds (:func:`replica_zip`) and its image;
the test's own build then waits for it (``replica.build_image`` builds one image at a time
per machine) and reuses it. The output goes to ``<tmp>/agtest-replica-prebuild.log``.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED_SECRET = "5eed" * 16          # pinned: the image cache is keyed by the zip's sha256
LOG_NAME = "agtest-replica-prebuild.log"


def replica_zip(out: Path) -> Path:
    """The Gradescope zip of every registered exercise (the opt-in ex6 too) the replica grades."""
    from autograder import contract
    from autograder.packaging.build import BuildContext, build

    ctx = build(BuildContext(root=ROOT, out=out, exercises=contract.EXERCISES, say=lambda _m: None,
                             seed_secret=SEED_SECRET), only=["gradescope"])
    return ctx.artifacts["gradescope"][0]


def main() -> int:
    from autograder.packaging.verify import replica

    with tempfile.TemporaryDirectory(prefix="agtest-replica-prebuild-") as tmp:
        name, seconds = replica.build_image(replica_zip(Path(tmp)), say=lambda m: print(m, flush=True))
    print(f"prebuild: {name} ({'built in %.0f s' % seconds if seconds is not None else 'reused'})", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
