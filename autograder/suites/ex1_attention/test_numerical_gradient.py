"""ex1 · numerical_gradient: central differences on non-separable functions.

The function ``f`` cannot cross the process boundary, so the worker builds it from
parameters (``autograder.support.functions``) and the grader builds the same one here.
"""
from __future__ import annotations

import numpy as np
import pytest

import reference.attention as ref
from autograder.diagnosis import ex1 as mistakes
from autograder.diagnosis.causes import General
from autograder.suites import checks, contract_rules
from autograder.suites.ex1_attention import common
from autograder.support import functions

NAME = "numerical_gradient"


def _params(offset: int, size: int, k: int = 5, c: float = 0.3) -> dict:
    r = common.rng(300 + offset)
    return {"A": r.normal(size=(k, size)), "b": r.normal(size=k), "c": c}


def _run(student, support, kind, params, x, eps=None):
    """The student's gradient, the change made to x, the calls f received, and the expectation."""
    f_remote = support.functions.make_function(kind, params, x)
    kwargs = {} if eps is None else {"eps": eps}
    with checks.calling(f"attention.{NAME}"):
        grad, changes = contract_rules.call_and_check_unchanged(
            support, getattr(student.attention, NAME), [f_remote, x], kwargs)
    report = f_remote.report()
    f_local = functions.make_function(kind, params)
    want = ref.numerical_gradient(f_local, x, **kwargs)
    inputs = checks.describe_inputs(x=x) + (f", eps={eps:g}" if eps is not None else "")
    return grad, changes, report, want, f_local, inputs


def _expect_gradient(grad, want, f_local, x, eps, inputs, rtol=1e-6, ruled_out=()):
    """``ruled_out``: mistakes the calls of f already showed were not made (never named)."""
    checks.expect_type(grad, np.ndarray, f"{NAME}(f, x)")
    checks.expect_shape(grad, x.shape, f"{NAME}(f, x)", inputs)
    checks.expect_dtype(grad, np.dtype("float64"), f"{NAME}(f, x)")
    checks.expect_close(grad, want, f"{NAME}(f, x)", inputs=inputs, rtol=rtol, atol=1e-8,
                        mistakes=lambda: {cause: values for cause, values
                                          in mistakes.numerical_gradient(f_local, x, eps).items()
                                          if cause not in ruled_out})


@pytest.mark.points(1.5)
@pytest.mark.covers("numerical_gradient")
@pytest.mark.contract("numerical_gradient/central-differences", "numerical_gradient/signature")
def test_numerical_gradient_default_eps(student, support):
    """numerical_gradient matches central differences (default eps) on a non-separable f"""
    x = common.rng(30).normal(size=(2, 3))
    grad, _, _, want, f_local, inputs = _run(student, support, "sin_mix", _params(0, x.size), x)
    # At eps=1e-6 a forward difference is off by about eps/2·f'' (~5e-7): rtol 1e-6 let it
    # pass on about 1 draw in 8. Correct central differences, however written (in place and
    # restored, one-hot steps, copies), stay within 3e-9 of the reference (1500 draws).
    _expect_gradient(grad, want, f_local, x, 1e-6, inputs, rtol=1e-7)


@pytest.mark.points(1.5)
@pytest.mark.covers("numerical_gradient")
@pytest.mark.contract("numerical_gradient/central-differences", "numerical_gradient/signature")
@pytest.mark.covers("numerical_gradient:args/eps")
def test_numerical_gradient_uses_eps(student, support):
    """numerical_gradient uses the eps it is given"""
    x = common.rng(31).normal(size=(4,))
    eps = 1e-2
    grad, _, report, want, f_local, inputs = _run(student, support, "logsumexp_mix",
                                                  _params(1, x.size, c=0.7), x, eps)
    # f is called where it is asked to be, whatever x: on about 1 draw in 20 a hard-coded
    # eps = 1e-6 gives a gradient within rtol 1e-6 of the eps = 1e-2 one (a near one-hot
    # softmax leaves little curvature), so the values alone cannot always tell.
    _expect_steps_of_eps(report["records"], eps, inputs)
    # f called at x + eps·e_i: eps was used, whatever else is wrong (an x not restored after
    # each step drifts into a gradient that can come within the hint's tolerance of eps = 1e-6's)
    stepped = any(r["n_changed"] == 1 and abs(r["max_change"] - eps) <= 1e-9 for r in report["records"])
    _expect_gradient(grad, want, f_local, x, eps, inputs,
                     ruled_out=(mistakes.NG_IGNORES_EPS,) if stepped else ())


def _expect_steps_of_eps(records: list[dict], eps: float, inputs: str) -> None:
    """Every call of f at a point with one entry of x changed changed it by eps."""
    far = [r for r in records if r["n_changed"] == 1 and abs(r["max_change"] - eps) > 1e-9]
    if far:
        checks.fail(f"{NAME}: f was called at x ± {far[0]['max_change']:.3g}·e_i; the step must be "
                    f"eps ({inputs})")


@pytest.mark.points(1)
@pytest.mark.parametrize("shape", [(2, 2, 2), (5,)], ids=["3-D x", "1-D x"])
@pytest.mark.covers("numerical_gradient")
@pytest.mark.contract("numerical_gradient/central-differences")
@pytest.mark.covers("numerical_gradient:args/x of any shape")
def test_numerical_gradient_any_shape(student, support, shape):
    """numerical_gradient works for x of any shape"""
    x = np.asarray(common.rng(32 + len(shape)).normal(size=shape), dtype=np.float64)
    eps = 1e-3
    grad, _, _, want, f_local, inputs = _run(student, support, "sin_mix",
                                             _params(2 + len(shape), max(1, x.size)), x, eps)
    _expect_gradient(grad, want, f_local, x, eps, inputs)


def _x_that_arithmetic_cannot_restore(eps: float, shape: tuple[int, ...] = (3, 2)) -> np.ndarray:
    """A hidden x on which perturbing in place and restoring by arithmetic (``x[i] += eps``,
    ``-= 2 * eps``, ``+= eps``) leaves rounding dust in an entry before the last, so that f is
    later called with two entries changed.
    Draws again (the same test's seed stream) while x happens to restore exactly: under one
    CI secret it did, and that mistake kept full marks."""
    for attempt in range(64):
        x = common.rng(33 + 97 * attempt).normal(size=shape)
        restored = ((x + eps) - 2 * eps) + eps                      # what x[i] += eps; -= 2 eps; += eps leaves
        if (restored != x).ravel()[:-1].any():
            return x
    return x


@pytest.mark.points(1)
@pytest.mark.covers("numerical_gradient")
@pytest.mark.contract("numerical_gradient/x-unchanged", "numerical_gradient/central-differences")
@pytest.mark.covers("numerical_gradient:inputs/ndarray")
def test_numerical_gradient_leaves_x_unchanged(student, support):
    """numerical_gradient leaves x unchanged and evaluates f at x ± eps·e_i"""
    eps = 1e-3
    x = _x_that_arithmetic_cannot_restore(eps)
    grad, changes, report, _, _, inputs = _run(student, support, "sin_mix", _params(5, x.size), x, eps)
    # in-place perturbation restored with arithmetic may leave rounding dust: allow it
    common.expect_unchanged(changes[1:2], ["x"], NAME, tolerance=1e-12)
    checks.expect_all_finite(grad, f"{NAME}(f, x)", inputs)
    records = report["records"]
    wrong_shape = [r for r in records if r["shape"] != list(x.shape)]
    if wrong_shape:
        checks.fail(f"{NAME}: f was called with an array of shape {tuple(wrong_shape[0]['shape'])}; "
                    f"call f with arrays of x's shape {x.shape} ({inputs})")
    several = [r for r in records if r["n_changed"] > 1]
    if several:
        # the other entries off by rounding dust only: x perturbed in place and "restored" by arithmetic
        dust = all(0 <= r.get("second_change", -1.0) <= eps * 1e-6 for r in several)
        checks.fail(f"{NAME}: f was called at a point where {several[0]['n_changed']} entries of x "
                    f"differ from x at once; perturb one entry at a time ({inputs})",
                    General.IN_PLACE if dust else None)
    perturbed = [r for r in records if r["n_changed"] == 1]
    if len(perturbed) < 2 * x.size:
        checks.fail(f"{NAME}: f was called at only {len(perturbed)} perturbed points; central "
                    f"differences need 2 per entry of x, {2 * x.size} here ({inputs})")
    _expect_steps_of_eps(perturbed, eps, inputs)
