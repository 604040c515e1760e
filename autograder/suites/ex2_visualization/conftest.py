"""ex2 hidden suite: the student's plots, drawn once per grading session and read back.

Each fixture calls the student's function ONCE in the worker, inspects what is displayed
with the kit's figure inspector (``support.figures``, also in the worker), closes the
figures, and hands the tests plain data. Tests then judge different properties of the
same drawing, so one mistake costs one test, and the suite stays fast.

Inputs are drawn from seeds named after each fixture (``autograder.seeds``), never the
public tests' literal ones. Every weight matrix is
non-square with distinct entries strictly between 0 and 1, so a transpose, a flip, or
automatic colour limits all show.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.sandbox import UnsupportedValue
from autograder.suites.ex2_visualization.common import weights

QUERIES = ["my", "old", "dog"]
KEYS = ["the", "cat", "sat", "on", "mats"]
QUERIES_2 = ["we", "ate", "ripe", "plums"]
KEYS_2 = ["yes", "no"]
HEAD_TOKENS = ["red", "fox", "ran"]
TITLE = "Layer 2 · head 3"
SUPTITLE = "All heads, layer 5"


def _axes_of(support, call):
    """Run ``call()`` (a student plotting call) and find the axes it drew into."""
    try:
        result = call()
        types = support.modules.type_names(result)
    except UnsupportedValue:                       # returned something that cannot cross
        result, types = None, ["(a value the grader cannot receive)"]
    ax = result if "Axes" in types else support.modules.find_axes(result)
    return types, ax


def _inspect(support, call) -> dict:
    watch = support.figures.watch_show()
    try:
        types, ax = _axes_of(support, call)
        info = support.figures.describe_axes(ax) if ax is not None else None
        return {"types": types, "info": info, "shows": watch()}
    finally:
        support.modules.close_all()


@pytest.fixture(scope="session")
def plain(student, support):
    """plot_attention(W (3, 5) NumPy, QUERIES, KEYS): no ax, no title, default cmap."""
    w = weights(3, 5, seed="plain")
    out = _inspect(support, lambda: student.visualize.plot_attention(w, QUERIES, KEYS))
    return {"weights": w, "queries": QUERIES, "keys": KEYS, **out}


@pytest.fixture(scope="session")
def titled(student, support):
    """plot_attention(W (4, 2), …, title=TITLE, cmap="magma") — more queries than keys."""
    w = weights(4, 2, seed="titled")
    out = _inspect(support, lambda: student.visualize.plot_attention(
        w, QUERIES_2, KEYS_2, title=TITLE, cmap="magma"))
    return {"weights": w, "queries": QUERIES_2, "keys": KEYS_2, "title": TITLE, **out}


@pytest.fixture(scope="session")
def from_tensor(student, support):
    """plot_attention(torch float32 tensor (3, 5) requiring grad, …)."""
    w = weights(3, 5, seed="from_tensor").astype(np.float32)
    t = torch.tensor(w, requires_grad=True)
    out = _inspect(support, lambda: student.visualize.plot_attention(t, QUERIES, KEYS))
    return {"weights": w.astype(np.float64), "queries": QUERIES, "keys": KEYS, **out}


@pytest.fixture(scope="session")
def into_given_ax(student, support):
    """A 1 × 2 figure made in the worker; plot_attention draws into the RIGHT axes."""
    w = weights(3, 5, seed="into_given_ax")
    try:
        fig, axes = support.modules.new_axes(1, 2, (7.0, 3.0))
        left, right = axes
        returned = student.visualize.plot_attention(w, QUERIES, KEYS, ax=right)
        same = support.modules.same_object(returned, right)
        info = support.figures.describe_axes(right)
        left_info = support.figures.describe_axes(left, draw=False)
        return {"weights": w, "queries": QUERIES, "keys": KEYS, "same": same,
                "info": info, "left": left_info}
    finally:
        support.modules.close_all()


@pytest.fixture(scope="session")
def over_an_open_figure(student, support):
    """plot_attention without ``ax`` while another figure, with an axes, is pyplot's current one."""
    w = weights(3, 5, seed="over_an_open_figure")
    try:
        fig, before = support.modules.new_axes(1, 1, (4.0, 3.0))
        returned = student.visualize.plot_attention(w, QUERIES, KEYS)
        same_figure = support.modules.same_object(support.modules.find_figure(returned), fig)
        info = support.figures.describe_axes(support.modules.find_axes(returned))
        before_info = support.figures.describe_axes(before, draw=False)
        return {"weights": w, "same_figure": same_figure, "info": info, "before": before_info}
    finally:
        support.modules.close_all()


def _inspect_figure(support, call) -> dict:
    watch = support.figures.watch_show()
    try:
        try:
            result = call()
            types = support.modules.type_names(result)
        except UnsupportedValue:
            result, types = None, ["(a value the grader cannot receive)"]
        fig = result if "Figure" in types else support.modules.find_figure(result)
        info = support.figures.describe_figure(fig) if fig is not None else None
        return {"types": types, "info": info, "shows": watch()}
    finally:
        support.modules.close_all()


@pytest.fixture(scope="session")
def heads5(student, support):
    """plot_attention_heads(W (5, 3, 3) NumPy, HEAD_TOKENS, ncols=3, title=SUPTITLE): a 2 × 3 grid."""
    w = weights(3, 3, seed="heads5", lead=(5,))
    out = _inspect_figure(support, lambda: student.visualize.plot_attention_heads(
        w, HEAD_TOKENS, ncols=3, title=SUPTITLE))
    return {"weights": w, "tokens": HEAD_TOKENS, "ncols": 3, "title": SUPTITLE, **out}


@pytest.fixture(scope="session")
def heads4(student, support):
    """plot_attention_heads(W (4, 3, 3) NumPy, HEAD_TOKENS, ncols=2): h a multiple of ncols, a 2 × 2 grid."""
    w = weights(3, 3, seed="heads4", lead=(4,))
    out = _inspect_figure(support, lambda: student.visualize.plot_attention_heads(w, HEAD_TOKENS, ncols=2))
    return {"weights": w, "tokens": HEAD_TOKENS, "ncols": 2, "title": None, **out}


@pytest.fixture(scope="session")
def heads2(student, support):
    """plot_attention_heads(W (2, 3, 3) NumPy, HEAD_TOKENS): default ncols=4, no title."""
    w = weights(3, 3, seed="heads2", lead=(2,))
    out = _inspect_figure(support, lambda: student.visualize.plot_attention_heads(w, HEAD_TOKENS))
    return {"weights": w, "tokens": HEAD_TOKENS, "ncols": 4, "title": None, **out}


@pytest.fixture(scope="session")
def heads_tensor(student, support):
    """plot_attention_heads(tensor (2, 3, 3) requiring grad, HEAD_TOKENS, ncols=2): a 0-point note's."""
    w = weights(3, 3, seed="heads_tensor", lead=(2,)).astype(np.float32)
    t = torch.tensor(w, requires_grad=True)
    out = _inspect_figure(support, lambda: student.visualize.plot_attention_heads(t, HEAD_TOKENS, ncols=2))
    return {"weights": w.astype(np.float64), "tokens": HEAD_TOKENS, "ncols": 2, "title": None, **out}


@pytest.fixture(scope="session")
def one_query(student, support):
    """plot_attention(W (1, 5) NumPy, one query token, KEYS): the smallest number of queries."""
    w = weights(1, 5, seed="one_query")
    out = _inspect(support, lambda: student.visualize.plot_attention(w, QUERIES[:1], KEYS))
    return {"weights": w, "queries": QUERIES[:1], "keys": KEYS, **out}


@pytest.fixture(scope="session")
def one_key(student, support):
    """plot_attention(W (3, 1) NumPy, QUERIES, one key token): the smallest number of keys."""
    w = weights(3, 1, seed="one_key")
    out = _inspect(support, lambda: student.visualize.plot_attention(w, QUERIES, KEYS[:1]))
    return {"weights": w, "queries": QUERIES, "keys": KEYS[:1], **out}


@pytest.fixture(scope="session")
def heads1(student, support):
    """plot_attention_heads(W (1, 3, 3) NumPy, HEAD_TOKENS): one head, default ncols=4: a 1 × 1 grid."""
    w = weights(3, 3, seed="heads1", lead=(1,))
    out = _inspect_figure(support, lambda: student.visualize.plot_attention_heads(w, HEAD_TOKENS))
    return {"weights": w, "tokens": HEAD_TOKENS, "ncols": 4, "title": None, **out}


@pytest.fixture(scope="session")
def heads3(student, support):
    """plot_attention_heads(W (3, 3, 3) NumPy, HEAD_TOKENS, ncols=3): h = ncols, a 1 × 3 grid."""
    w = weights(3, 3, seed="heads3", lead=(3,))
    out = _inspect_figure(support, lambda: student.visualize.plot_attention_heads(w, HEAD_TOKENS, ncols=3))
    return {"weights": w, "tokens": HEAD_TOKENS, "ncols": 3, "title": None, **out}
