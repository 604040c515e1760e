"""Packaging: what leaves the kit.

    release/    the student release, ``assignments/`` from ``solutions/`` (``python -m autograder release``)
    exports/    build steps writing ``dist/``: the Gradescope zip, the wheel, ``release.zip``
    verify/     a built zip run as Gradescope runs it (``--self-grade``, ``--verify docker``)
    build.py    ``python -m autograder build``: the export steps in order, then the proofs
    zips.py     the lowest layer every export shares (deterministic zips, the build info)

The otter and nbgrader exports are build steps too; they live in :mod:`autograder.interop`.
"""
