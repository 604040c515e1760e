"""Every mistake the kit can name, as an identity: ``Cause`` (a stable id and the sentence the
student reads), and ``Several`` for mistakes a test cannot tell apart.

A failing test names at most one diagnosis: a ``Cause``, or ``Several`` causes when the test's
inputs give the same result for each of them (the student is told all of them, joined by
"or"; the kit never picks one). ``checks.fail(message, cause)`` writes the sentence on the
message's ``Likely cause:`` line and the ids into the result's ``extra_data.cause`` (a list),
which the gradebook counts and the hint measure (``bench/hint_measure.py``) checks against
each corpus bug's label.

Where causes live: :class:`General` here (mistakes of any exercise: exceptions, dtypes,
devices, shapes; ids ``general.<name>``); each exercise's own in its folder,
``autograder/suites/<folder>/causes.py`` (a ``Cause`` subclass; ids ``<exercise id>.<name>``),
so that adding an exercise touches no module here. :func:`every` and :func:`of_id` read them
all through the registry. An id never changes meaning; a sentence may be reworded.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from enum import Enum
from types import ModuleType
from typing import Iterable, Union


class Cause(Enum):
    """A known mistake (the base of :class:`General` and of each exercise's causes, no members
    of its own): ``.id`` is stable, ``.sentence`` is what the student reads; :func:`of_id` finds
    one by id."""

    def __new__(cls, cause_id: str, sentence: str) -> "Cause":
        member = object.__new__(cls)
        member._value_ = cause_id
        member.sentence = sentence
        return member

    @property
    def id(self) -> str:
        return self.value


class General(Cause):
    """A mistake of any exercise (exceptions, dtypes, devices, shapes): ids ``general.<name>``."""

    NUMPY_OF_GRAD_TENSOR = (
        "general.numpy_of_grad_tensor",
        "a tensor that requires grad is turned into a NumPy array: call .detach() first "
        "(weights.detach().cpu().numpy())")
    VIEW_AFTER_TRANSPOSE = (
        "general.view_after_transpose",
        ".view(...) on a tensor made non-contiguous by transpose: use .reshape(...) or "
        ".contiguous().view(...)")
    DTYPE_MIX = (
        "general.dtype_mix",
        "a tensor of another dtype enters the computation (e.g. torch.tensor(…) or a mask created in "
        "float64 next to float32 inputs): create new tensors with dtype=x.dtype, or use Python floats")
    MASK_NOT_BOOL = (
        "general.mask_not_bool",
        "the mask is built as a number tensor (torch.ones(n, n) without dtype=torch.bool, a "
        "float tril, or 0/1 or 0/-inf values): masks are torch.bool, True = may attend")
    IN_PLACE = (
        "general.in_place",
        "an in-place operation on an input (x -= m, Q /= √d_k, masked_fill_, x[...] = …, or "
        "writing through .numpy() / np.asarray(x), which share the tensor's memory): work on "
        "new arrays/tensors, e.g. x = x - m")
    IN_PLACE_NEEDED_BY_AUTOGRAD = (
        "general.in_place_needed_by_autograd",
        "an in-place operation on a tensor autograd still needs: use the out-of-place form "
        "(masked_fill, not masked_fill_; x = x + y, not x += y)")
    SIGNATURE_MISSING_PARAMETER = (
        "general.signature_missing_parameter",
        "the function's signature lacks a parameter of the docstring (named in the error above): "
        "add it, with its default")
    SIGNATURE_TOO_FEW_PARAMETERS = (
        "general.signature_too_few_parameters",
        "the function's signature has fewer parameters than the docstring: compare it with the stub")
    RETURNS_ONE_VALUE = (
        "general.returns_one_value",
        "your function returns a single array or tensor where its docstring asks for a tuple: "
        "return all of them, e.g. `return output, weights`")
    FLOAT64_ENTERS = (
        "general.float64_enters",
        "a float64 value enters the computation (torch.tensor(…, dtype=torch.float64), "
        ".double(), a NumPy float64 array, or torch.tensor(math.sqrt(d_k)) made in float64): "
        "compute in the input's dtype, e.g. divide by math.sqrt(d_k), a Python float")
    CAST_TO_FLOAT32 = (
        "general.cast_to_float32",
        "the computation is cast to float32 (.float(), .to(torch.float32), dtype=torch.float32, "
        "or a new tensor made with torch.tensor(…)/torch.ones(…) in the default dtype): keep "
        "the input's dtype (dtype=x.dtype), float64 inputs give float64 results")
    TENSOR_ON_DEFAULT_DEVICE = (
        "general.tensor_on_default_device",
        "a tensor is created on the default device (torch.ones(n, n), torch.zeros(...), torch.arange(n), "
        "torch.tril(torch.ones(...)), torch.tensor(...)) without device=x.device: create new "
        "tensors on the input's device (device=x.device) or derive them from the input")
    FILL_VALUE_TENSOR = (
        "general.fill_value_tensor",
        "a fill value given as a tensor made on the CPU (masked_fill(mask, torch.tensor(-1e9))): "
        "give it as a Python float, masked_fill(~mask, float('-inf'))")
    VALUE_READ_OUT = (
        "general.value_read_out",
        "a value is read out of a tensor on the computation path (.item(), .numpy(), .tolist(), "
        "float(...), bool(...), `if tensor...`): torch functions must work on any device with "
        "torch operations only")
    RESULT_ON_CPU = (
        "general.result_on_cpu",
        "the result is moved or created on the CPU (.cpu(), torch.tensor(...), torch.from_numpy(...)): "
        "keep it on the input's device")
    DETACHED = (
        "general.detached",
        "a .detach(), .data, .numpy(), .item(), torch.tensor(…) of a tensor or torch.no_grad() on the way "
        "from the inputs to the result cuts it off from autograd")
    BANNED_API = (
        "general.banned_api",
        "a library function this exercise bans (a built-in attention such as scaled_dot_product_attention "
        "or nn.MultiheadAttention, or torch inside a NumPy-only function) where "
        "the exercise asks for your own code")
    ASSERT_FOR_VALUE_ERROR = (
        "general.assert_for_value_error",
        "use `raise ValueError(...)`, not assert (asserts can be switched off)")
    BATCHED_DOT_T = (
        "general.batched_dot_t",
        ".T on an array or tensor with more than two axes reverses ALL of them: swap only the last "
        "two (np.swapaxes(K, -1, -2), K.transpose(-2, -1) or K.mT)")
    SQUEEZE_ALL = (
        "general.squeeze_all",
        "squeeze() without a dim removes every axis of size 1, the batch axis too when B = 1: "
        "squeeze only the axis you mean (squeeze(0), squeeze(-1)) or index it (h_n[-1])")
    CONSTANT_FACTOR = (
        "general.constant_factor",
        "your result is the expected one times a constant factor: a factor is missing or extra "
        "(a scaling such as 1/√d_k, a sum where a mean is due, a count such as the batch size)")
    MASK_EXTRA_AXIS = (
        "general.mask_extra_axis",
        "the mask is given an axis it does not need (mask.unsqueeze(…)): the documented masks already "
        "broadcast to the scores' shape, use them as they are (masked_fill and torch.where broadcast)")
    MASK_INDEXING = (
        "general.mask_indexing",
        "scores[~mask] = … (boolean indexing) needs a mask of exactly the scores' shape, but masks only "
        "broadcast to it: use scores.masked_fill(~mask, float('-inf')) or torch.where / np.where")


@dataclass(frozen=True)
class Several:
    """Causes a test cannot tell apart (its inputs give each the same result): the student is
    told every one of them ("A, or: B"), never one picked arbitrarily. At least two, distinct."""
    causes: tuple[Cause, ...]

    def __post_init__(self) -> None:
        if len(self.causes) < 2 or len(set(self.causes)) != len(self.causes):
            raise ValueError("Several needs two or more distinct causes")


Diagnosis = Union[Cause, Several]


def diagnosis_of(causes: Iterable[Cause]) -> Diagnosis | None:
    """One cause, ``Several`` (duplicates dropped, order kept), or None for none."""
    unique = tuple(dict.fromkeys(causes))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else Several(unique)


def members(diagnosis: Diagnosis | None) -> tuple[Cause, ...]:
    if diagnosis is None:
        return ()
    return diagnosis.causes if isinstance(diagnosis, Several) else (diagnosis,)


def ids(diagnosis: Diagnosis | None) -> list[str]:
    """What ``extra_data.cause`` holds: the causes' ids (one, or several the test cannot tell apart)."""
    return [c.id for c in members(diagnosis)]


def text(diagnosis: Diagnosis | None) -> str:
    """The student's ``Likely cause:`` text: ``"A\\n  or: B"`` for several ("" for none)."""
    return "\n  or: ".join(c.sentence for c in members(diagnosis))


def text_of_ids(cause_ids: "Iterable[str]") -> str:
    """The ``Likely cause:`` text of a result's ``extra_data.cause`` ids (an unknown id as itself)."""
    known = {c.id: c.sentence for c in every()}
    return "\n  or: ".join(known.get(i, i) for i in cause_ids)


# --------------------------------------------------------------------------- every exercise's causes

@functools.lru_cache(maxsize=1)
def exercise_modules() -> tuple[ModuleType, ...]:
    """Each registered exercise's ``causes`` module (``autograder/suites/<folder>/causes.py``),
    in the registry's order; an exercise without one names only general causes."""
    from autograder.contract import EXERCISES, SUITES
    return tuple(importlib.import_module(f"autograder.suites.{ex.folder}.causes") for ex in EXERCISES
                 if (SUITES / ex.folder / "causes.py").is_file())


def every() -> tuple[Cause, ...]:
    """Every cause the kit can name: the general ones, then each exercise's."""
    out: list[Cause] = list(General)
    for module in exercise_modules():
        out += [c for value in vars(module).values()
                if isinstance(value, type) and issubclass(value, Cause) and value is not Cause
                and value.__module__ == module.__name__ for c in value]
    return tuple(out)


def of_id(cause_id: str) -> Cause:
    """The cause with this id (KeyError if none: an id never disappears while a label uses it)."""
    for cause in every():
        if cause.id == cause_id:
            return cause
    raise KeyError(cause_id)
