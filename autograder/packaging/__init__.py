"""Packaging: the student release (``release.py``, solution markers in ``markers.py``).

Gradescope, nbgrader and otter exports live beside it.
"""
