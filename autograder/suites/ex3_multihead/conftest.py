"""ex3 hidden suite: one student module per grading session, loaded with reference weights."""
from __future__ import annotations

import pytest

from autograder.suites.ex3_multihead.common import D_MODEL, HEADS, reference_state

@pytest.fixture(scope="session")
def state():
    """The reference weights (float32 state dict) every forward test loads."""
    return reference_state("state")        # a seed of its own, named (autograder.seeds)


@pytest.fixture
def mha(student, support, state):
    """A fresh student MultiHeadAttention(12, 3) in the worker, loaded with ``state``.

    Built per test (two cheap calls), so a worker restarted after one test's crash never
    leaves the other tests holding a handle to an object that no longer exists."""
    model = student.multihead.MultiHeadAttention(D_MODEL, HEADS)
    support.modules.load_weights(model, state)
    return model
