"""Who is to blame for a banned call (``sandbox/threads.py: culprit``), and ex5's scope.

Both run-time banned-API layers ask :func:`threads.culprit` about the code calling: a frame
of a file that bans the API; student-made code of no known file; in a worker (``strict``),
no student file at all (an object the student's code returned, doing the banned work when
the kit reads it: red team, full marks in ex1, ex3 and ex4). ex5's contract bans attention
only "in ``AttentionClassifier``": its scope probe (``worker.scope_probe``) covers the class
bound to that name (an alias or a subclass too), its bases in the file and what their bodies
bind, not the module's own code (a self-check against PyTorch's attention at the top of the
file once cost the whole exercise: red team). Frames are made here by running code compiled
under the file names the rules read.
"""
from __future__ import annotations

import functools
import types

import pytest

from autograder.sandbox import threads, worker

STUDENT, OTHER, LIBRARY = "lstm_vs_attention.py", "visualize.py", functools.__file__


def blame(frame, *args, **kwargs):
    """:func:`threads.culprit` reading the code up to this test's (as a worker reads it up to
    the frame answering the request): the frames of this file are not the student's."""
    boundary = frame
    while boundary is not None and boundary.f_code.co_filename != __file__:
        boundary = boundary.f_back
    with threads.request_boundary(boundary):
        return threads.culprit(frame, *args, **kwargs)


def frame_from(*filenames: str):
    """A frame whose stack, innermost first, runs code named ``filenames`` (then this test's)."""
    caught: list = []
    call = lambda: caught.append(__import__("sys")._getframe(1))        # noqa: E731
    for filename in filenames[::-1]:
        inner = call
        namespace = {"inner": inner}
        exec(compile("def step():\n    inner()\n", filename, "exec"), namespace)
        call = namespace["step"]
    call()
    return caught[0]


def test_a_banning_file_anywhere_on_the_stack_is_blamed():
    blamed = blame(frame_from(LIBRARY, STUDENT), {STUDENT}, {STUDENT, OTHER})
    assert blamed is not None and blamed.filename == STUDENT and blamed.line == 2


def test_a_file_without_the_ban_passes_and_student_made_code_does_not():
    assert blame(frame_from(LIBRARY, OTHER), {STUDENT}, {STUDENT, OTHER}, strict=True) is None
    blamed = blame(frame_from(LIBRARY, "<string>", OTHER), {STUDENT}, {STUDENT, OTHER})
    assert blamed is not None and blamed.filename == "<string>"
    # where the student files are not known (grading in the grader's own process), only the
    # banning file's own code is blamed
    assert blame(frame_from(LIBRARY, "<string>"), {STUDENT}, None) is None


def test_in_a_worker_work_left_for_the_kit_to_do_is_the_students():
    """Only library (and kit) code running: strict (a worker) blames the student's code."""
    assert blame(frame_from(LIBRARY), {STUDENT}, {STUDENT}, strict=True) is threads.AFTER_RETURN
    assert blame(frame_from(LIBRARY), {STUDENT}, {STUDENT}, strict=False) is None


SCOPED = '''
import torch
from torch import nn

def module_code():                      # the file's own code: a self-check, a demo
    return here()

class _Base(nn.Module):
    def inherited(self):
        return here()

class AttentionClassifier(_Base):
    def method(self):
        return here()
    def nested(self):
        return (lambda: here())()
    @staticmethod
    def static():
        return here()

def helper():                           # bound in the class below: the class's code
    return here()

AttentionClassifier.bound_later = staticmethod(helper)

class _Impl(nn.Module):
    def method(self):
        return here()

class LSTMClassifier(nn.Module):
    def method(self):
        return here()
'''


@pytest.fixture
def scoped_module():
    module = types.ModuleType("lstm_vs_attention")
    module.__file__ = STUDENT
    module.here = lambda: __import__("sys")._getframe(1)
    exec(compile(SCOPED, STUDENT, "exec"), module.__dict__)
    return module


def test_ex5s_scope_is_the_class_bound_to_its_name(scoped_module):
    m = scoped_module
    probe = worker.scope_probe(m, ("AttentionClassifier",))
    inside = [m.AttentionClassifier().method(), m.AttentionClassifier().nested(), m.AttentionClassifier.static(),
              m.AttentionClassifier().inherited(), m.AttentionClassifier.bound_later()]
    outside = [m.module_code(), m.LSTMClassifier().method(), m._Impl().method()]
    assert [probe(f) for f in inside] == [True] * len(inside)
    assert [probe(f) for f in outside] == [False] * len(outside)
    m.AttentionClassifier = m._Impl                    # an alias: the name is what counts
    assert probe(m._Impl().method()) and not probe(m.LSTMClassifier().method())
    m.AttentionClassifier = functools.partial(m._Impl)    # neither a class nor a function: the whole file
    assert probe(m.module_code())


HANDED_OUT = """
import functools
import sys


def _module_classify(self):
    return sys._getframe(0)


def _make():
    class Hidden:
        def method(self):
            return sys._getframe(0)
    return Hidden


class WithPartialMethod:
    classify = functools.partialmethod(_module_classify)


def module_code():
    return sys._getframe(0)


def __getattr__(name):
    if name == "AttentionClassifier":
        return _make()
    raise AttributeError(name)
"""


def _handed_out_module():
    module = types.ModuleType("lstm_vs_attention")
    module.__file__ = STUDENT
    exec(compile(HANDED_OUT, STUDENT, "exec"), module.__dict__)
    return module


def test_ex5s_scope_follows_a_class_handed_out_by_the_modules_getattr():
    """A class the module's ``__getattr__`` hands out under the contract's name is the class
    once the file has loaded (bound in its namespace then): its methods are in scope, the
    module's other code is not (red team s24: it scored 20/20 with the banned function)."""
    m = _handed_out_module()
    probe = worker.scope_probe(m, ("AttentionClassifier",))
    assert not probe(m.module_code())                      # while loading: nothing bound yet
    probe.loaded(m)
    assert probe(m.AttentionClassifier().method()) and not probe(m.module_code())


def test_ex5s_scope_counts_partialmethod_members_and_an_unbound_name_covers_the_file():
    m = _handed_out_module()
    m.AttentionClassifier = m.WithPartialMethod
    probe = worker.scope_probe(m, ("AttentionClassifier",))
    probe.loaded(m)
    assert probe(m.WithPartialMethod().classify()) and not probe(m.module_code())
    del m.AttentionClassifier, m.__getattr__               # once loaded, no class at all: the whole file
    assert probe(m.module_code())


def test_a_scoped_ban_blames_only_code_in_its_scope(scoped_module):
    m = scoped_module
    threads.set_scope_probe(STUDENT, worker.scope_probe(m, ("AttentionClassifier",)))
    try:
        outside, inside = m.module_code(), m.AttentionClassifier().method()
        assert blame(outside, {STUDENT}, {STUDENT}, scoped={STUDENT}, strict=True) is None
        blamed = blame(inside, {STUDENT}, {STUDENT}, scoped={STUDENT}, strict=True)
        assert blamed is not None and blamed.filename == STUDENT and blamed.in_scope
        assert blame(outside, {STUDENT}, {STUDENT}, strict=True) is not None     # unscoped: the file
    finally:
        threads._probes.pop(STUDENT, None)
