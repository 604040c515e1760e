"""Comparisons for hidden tests, with failure messages written for students.

A failure says what was checked, on what shapes, and the largest difference, and names a
known mistake when the result matches one (see ``autograder.diagnosis``) on a line of its
own, ``Likely cause: …``. It never prints expected values or test source, except on the
explicit ``reveal=True`` path that only public tests use (public tests are shipped to
students, so their expected values are no secret; tests/test_suites_corpus.py checks that no
hidden test passes it). Every judgement happens here, in the grader.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn

import numpy as np
import torch

from autograder.jsontypes import JSONObject
from autograder.diagnosis import Candidates, diagnose
from autograder.diagnosis.causes import Cause, Diagnosis, Several, text as cause_text
from autograder.diagnosis.causes import General
from autograder.sandbox.errors import ExerciseUnavailable, StudentError, WorkerCrashed, describe_error


class GradingFailure(AssertionError):
    """A check failed; the message is shown to the student as is; ``cause`` (the likely
    mistake: a ``Cause``, or ``Several`` the test cannot tell apart; its sentence is also the
    message's last line) is data for the results' ``extra_data`` (its ids)."""

    def __init__(self, message: str, cause: Diagnosis | None = None) -> None:
        super().__init__(message)
        self.cause = cause


CAUSE = "Likely cause: "

# {file name: text} of the student's file for the running test (set by suites/conftest.py): a
# cause may be read from the student's own lines (autograder.diagnosis.errors)
student_sources: dict[str, str] = {}


def fail(message: str, cause: Diagnosis | None = None) -> NoReturn:
    """Fail the test; ``cause`` names the student's likely mistake on a line of its own (the
    one way a cause is written: never type ``Likely cause:`` into a message). Only a known
    ``Cause`` (or ``Several``) can be named: a hint has an identity the kit can count and check."""
    if cause is not None and not isinstance(cause, (Cause, Several)):
        raise TypeError(f"a likely cause is a Cause or Several, not {type(cause).__name__}")
    raise GradingFailure(message + (f"\n{CAUSE}{cause_text(cause)}" if cause else ""), cause)


def shown(value: Any, limit: int = 400) -> str:
    """A value as text for a public test's message (rounded, shortened)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        text = np.array2string(np.round(value, 4) if value.dtype.kind == "f" else value, separator=", ")
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + " …"


def shape_of(x: Any) -> str:
    if isinstance(x, (np.ndarray, torch.Tensor)):
        return "(" + ", ".join(str(d) for d in x.shape) + ")"
    return type(x).__name__


def describe_inputs(**inputs: Any) -> str:
    """``Q (2, 3, 4), K (2, 5, 4), mask (3, 5)`` — shapes only, never values."""
    return ", ".join(f"{k} {shape_of(v)}" if isinstance(v, (np.ndarray, torch.Tensor)) else f"{k}={v!r}"
                     for k, v in inputs.items())


def as_array(x: Any, what: str) -> np.ndarray:
    """A float64/complex/bool NumPy copy of an array or tensor the student returned."""
    if isinstance(x, torch.Tensor):
        x = x.detach().to(torch.float64 if x.is_floating_point() else x.dtype).numpy()
    if not isinstance(x, np.ndarray):
        fail(f"{what}: expected an array or tensor, got {type(x).__name__}")
    return np.asarray(x, dtype=np.float64) if x.dtype.kind in "fiu" else x


def expect_type(value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        fail(f"{what}: expected {names}, got {type(value).__name__}")


def expect_tuple(value: Any, length: int, what: str) -> tuple:
    if not isinstance(value, (tuple, list)) or len(value) != length:
        got = f"{type(value).__name__} of length {len(value)}" if isinstance(value, (tuple, list)) \
            else type(value).__name__
        cause = General.RETURNS_ONE_VALUE if isinstance(value, (np.ndarray, torch.Tensor)) else None
        fail(f"{what}: expected a tuple of {length} values, got {got}", cause)
    return tuple(value)


def expect_shape(value: Any, shape: tuple[int, ...], what: str, inputs: str = "") -> None:
    if not isinstance(value, (np.ndarray, torch.Tensor)):
        fail(f"{what}: expected an array or tensor, got {type(value).__name__}")
    if tuple(value.shape) != tuple(shape):
        fail(f"{what}: expected shape {tuple(shape)}, got {tuple(value.shape)}"
             + (f" (inputs: {inputs})" if inputs else ""), shape_cause(tuple(value.shape), tuple(shape)))


def shape_cause(got: tuple[int, ...], want: tuple[int, ...]) -> Cause | None:
    """A result that lost exactly the size-1 axes of its expected shape, from code that calls
    ``squeeze()`` without a dim (read in the student's file): every size-1 axis went, the
    batch axis too."""
    import re

    if 1 not in want or tuple(d for d in want if d != 1) != tuple(got):
        return None
    code = "\n".join(line.split("#")[0] for text in student_sources.values() for line in text.splitlines())
    return General.SQUEEZE_ALL if re.search(r"\.squeeze\(\s*\)|torch\.squeeze\(\s*[^,()]+\)", code) else None


def expect_dtype(value: Any, dtype: torch.dtype | np.dtype, what: str) -> None:
    """``value`` has ``dtype``; a floating result must hold numbers too (a dtype rule is judged
    on a call that works: NaN/inf of the right dtype pass nothing)."""
    got = getattr(value, "dtype", None)
    if got != dtype:
        fail(f"{what}: expected dtype {dtype}, got {got if got is not None else type(value).__name__}",
             dtype_cause(got, dtype))
    if isinstance(value, (np.ndarray, torch.Tensor)) and getattr(value, "device", None) != torch.device("meta"):
        expect_all_finite(value, what)


def dtype_cause(got: Any, want: Any) -> Cause | None:
    """The usual reason for a result of dtype ``got`` where ``want`` was due."""
    if want == torch.bool and got is not None and got != torch.bool:
        return General.MASK_NOT_BOOL
    if want in (torch.float32, torch.float16, torch.bfloat16) and got == torch.float64:
        return General.FLOAT64_ENTERS
    if want == torch.float64 and got in (torch.float32, torch.float16, torch.bfloat16):
        return General.CAST_TO_FLOAT32
    return None


def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for comparing results computed in ``dtype``."""
    if dtype in (torch.float64, np.float64, np.dtype("float64")):
        return 1e-7, 1e-9
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    return 1e-4, 1e-5


def nonfinite_message(arr: np.ndarray, bad: np.ndarray, what: str) -> str:
    """``"weights: contains NaN (returned NaN/inf at index (0, 2), 6 of 12 entries)"``."""
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
    first = arr[index] if arr.ndim else arr
    kind = "NaN" if np.isnan(first) else "inf"
    return (f"{what}: contains {kind} (returned NaN/inf at index {index}, "
            f"{int(bad.sum())} of {bad.size} entries)")


def expect_all_finite(value: Any, what: str, inputs: str = "") -> None:
    """``value`` is arrays or tensors (or numbers; nested in tuples, lists, dicts too) holding
    numbers only: no NaN, no inf, no other kind of object. For tests that judge something
    else about a call (its inputs left alone, its structure, that it runs): a result of
    NaN/inf, or an object that only poses as one, is no result."""
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            expect_all_finite(item, f"{what}[{i}]" if len(value) > 1 else what, inputs)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            expect_all_finite(item, f"{what}[{key!r}]", inputs)
        return
    if isinstance(value, (bool, int, float)):
        value = np.asarray(float(value))
    if not isinstance(value, (np.ndarray, torch.Tensor)):
        fail(f"{what}: expected an array or tensor, got {type(value).__name__}")
    if value.dtype not in (torch.bool, np.bool_):
        arr = as_array(value, what)
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            fail(nonfinite_message(arr, ~np.isfinite(arr), what) + (f" (inputs: {inputs})" if inputs else ""))


def shown_matrix(info: JSONObject, what: str) -> np.ndarray:
    """The matrix a heatmap displays (``support.figures.describe_axes``), empty cells as NaN."""
    matrix = info.get("matrix")
    if matrix is None:
        fail(f"{what}: no heatmap found in the axes (use imshow, matshow or pcolormesh)")
    return np.array([[np.nan if v is None else float(v) for v in row] for row in matrix])


def expect_finite_heatmap(info: JSONObject, what: str) -> None:
    """A heatmap is drawn and shows numbers in every cell (not NaN, inf or masked cells):
    whatever else a test judges, the values must be on display."""
    got = shown_matrix(info, what)
    if got.size == 0 or not np.isfinite(got).all():
        fail(f"{what}: the heatmap shows NaN/inf or empty cells "
             f"({int((~np.isfinite(got)).sum())} of {got.size}): it must display the values")


def expect_finite(value: Any, what: str, inputs: str, nan_hint: Diagnosis | None = None) -> None:
    """No NaN or inf; ``nan_hint`` names the likely cause of NaN when the caller can tell."""
    arr = as_array(value, what)
    if np.isnan(arr).any():
        fail(f"{what}: contains NaN (inputs: {inputs})", nan_hint)
    if np.isinf(arr).any():
        fail(f"{what}: contains inf (inputs: {inputs})")


def expect_close(actual: Any, expected: Any, what: str, *, inputs: str = "",
                 rtol: float = 1e-5, atol: float = 1e-6,
                 mistakes: Candidates | Callable[[], Candidates] | None = None,
                 reveal: bool = False) -> None:
    """Fail unless ``actual`` matches ``expected`` elementwise; name a known mistake if one fits.
    ``reveal=True`` (public tests only) shows the expected and the actual values."""
    got = as_array(actual, what)
    want = as_array(expected, "expected")
    where = f" (inputs: {inputs})" if inputs else ""
    if reveal:
        where += f"\nexpected {shown(want)}\ngot      {shown(got)}"
    if got.shape != want.shape:
        fail(f"{what}: expected shape {want.shape}, got {got.shape}{where}", shape_cause(got.shape, want.shape))
    if got.dtype.kind in "fc" and want.dtype.kind in "fc":
        nonfinite = ~np.isfinite(got) & np.isfinite(want)       # NaN/inf where a number is due
        if nonfinite.any():
            fail(nonfinite_message(got, nonfinite, what) + where, _hint(got, mistakes, rtol, atol))
    if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        return
    diff = np.abs(got - want)
    diff[np.isnan(diff)] = np.inf
    index = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
    cause = _hint(got, mistakes, rtol, atol)
    factor = constant_factor(got, want, rtol, atol) if cause is None else None
    fail(f"{what}: values differ from the expected result{where}; largest difference "
         f"{float(diff.max()):.3g} at index {tuple(int(i) for i in index)} "
         f"(tolerance {atol:g} + {rtol:g}·|expected|)"
         + (f"; your values are {factor:.4g} times the expected ones" if factor is not None else ""),
         cause or (General.CONSTANT_FACTOR if factor is not None else None))


def constant_factor(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> float | None:
    """The positive factor c ≠ 1 with ``got`` = c · ``want`` (within the tolerance), when at
    least four entries of ``want`` are clearly non-zero and not all equal (a factor is then
    the only difference); else None."""
    if got.dtype.kind != "f" or want.dtype.kind != "f" or not np.isfinite(got).all() or not np.isfinite(want).all():
        return None
    big = np.abs(want) > max(atol, 1e-8) * 100
    if int(big.sum()) < 4 or np.allclose(want[big], want[big].flat[0]):
        return None
    c = float(np.median(got[big] / want[big]))
    if not c > 0 or abs(c - 1) < 1e-3:
        return None
    return c if np.allclose(got, c * want, rtol=max(rtol, 1e-6), atol=atol * max(c, 1.0)) else None


def _hint(got: np.ndarray, mistakes, rtol: float, atol: float) -> Diagnosis | None:
    if mistakes is None:
        return None
    candidates = mistakes() if callable(mistakes) else mistakes
    return diagnose(got, candidates, rtol=max(rtol, 1e-4), atol=max(atol, 1e-5))


def likely_cause(value: Any, mistakes: Candidates | Callable[[], Candidates] | None,
                 rtol: float = 1e-4, atol: float = 1e-5) -> Diagnosis | None:
    """The mistake ``value`` matches among ``mistakes``, else None: the ``cause`` of a check
    that fails before a value comparison (sums, shapes, NaN)."""
    try:
        got = as_array(value, "value")
    except GradingFailure:
        return None
    return _hint(got, mistakes, rtol, atol)


def expect_output_and_weights(out: Any, w: Any, want_out: Any, want_w: Any, inputs: str, *,
                              rtol: float, atol: float, mistakes: Callable[[str], Candidates],
                              dtype: Any = None, nan_hint: Diagnosis | None = None) -> None:
    """An attention function's ``(output, weights)`` against the reference's, in the order a
    student should fix them: shapes, dtype (when given), finite weights, then values.
    ``mistakes(which)`` gives the known wrong outputs for ``"weights"`` or ``"output"``."""
    expect_shape(w, tuple(want_w.shape), "weights", inputs)
    expect_shape(out, tuple(want_out.shape), "output", inputs)
    if dtype is not None:
        expect_dtype(w, dtype, "weights")
        expect_dtype(out, dtype, "output")
    expect_finite(w, "weights", inputs, nan_hint)
    expect_close(w, want_w, "weights", inputs=inputs, rtol=rtol, atol=atol,
                 mistakes=lambda: mistakes("weights"))
    expect_close(out, want_out, "output", inputs=inputs, rtol=rtol, atol=atol,
                 mistakes=lambda: mistakes("output"))


def expect_equal(actual: Any, expected: Any, what: str, *, inputs: str = "", reveal: bool = False) -> None:
    """Exact equality for ints, strings, lists, bool masks (shown without values, unless
    ``reveal=True``: public tests only)."""
    where = f" (inputs: {inputs})" if inputs else ""
    if reveal:
        where += f"\nexpected {shown(expected)}\ngot      {shown(actual)}"
    if isinstance(expected, (np.ndarray, torch.Tensor)):
        got, want = as_array(actual, what), as_array(expected, "expected")
        if got.shape != want.shape:
            fail(f"{what}: expected shape {want.shape}, got {got.shape}{where}")
        wrong = int((got != want).sum())
        if wrong:
            fail(f"{what}: {wrong} of {want.size} entries are wrong{where}")
        return
    if actual != expected:
        fail(f"{what}: not the expected value{where}")


@contextmanager
def calling(what: str) -> Iterator[None]:
    """Name the student's function, not the kit helper that called it, in error messages.

    ``support.autograd.grads(student.attention.f, …)`` reports a student exception as
    coming from the support helper; inside ``with calling("attention.f"):`` it reads
    "attention.f raised …" / "attention.f is not implemented yet" instead.
    """
    try:
        yield
    except (WorkerCrashed, ExerciseUnavailable):
        raise
    except StudentError as exc:
        if exc.error is None:
            raise
        raise type(exc)(describe_error(exc.error, what=what), exc.error) from None


def expect_no_banned_apis(submission: Any, exercise_id: str, run: Callable[[], Any], *,
                          rules: str, cause: Cause = General.BANNED_API) -> None:
    """The banned-API test every suite shares (one rule, one message style).

    The points are for working hand-written code: ``run`` calls the exercise's main
    computation in the worker, where a banned API reached any way (its Python name, an
    alias, ``__wrapped__``, a computed name, ``torch.ops.aten.*``, ``torch._C._nn.*``, C++)
    is refused with a ``BannedAPIError`` (``sandbox/guards.py``, ``sandbox/opguard.py``).
    Then the static rule's hits (``intake.find_banned``: uses spelt out in the source, also
    ones the run did not reach) fail the test too, naming the lines. ``rules`` says what the
    exercise asks for, in a few words.
    """
    from autograder import contract       # data only

    filename = contract.BY_ID[exercise_id].filename
    found = submission.found.get(exercise_id)
    if found is None or found.source is None:
        fail(getattr(found, "problem", None) or f"{filename} could not be read")
    try:
        run()
    except StudentError as exc:
        if exc.raised != "BannedAPIError":
            raise
        fail(f"{filename} reached an API this exercise does not allow ({rules}): "
             f"{exc.error.message if exc.error else ''}", cause=cause)
    if found.banned:
        lines = "\n".join(f"  {hit}" for hit in found.banned[:20])
        fail(f"{filename} uses APIs this exercise does not allow ({rules}):\n{lines}", cause=cause)
