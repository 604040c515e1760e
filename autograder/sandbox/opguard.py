"""Banned APIs refused at the operator level: the backstop behind ``guards.BanGuards``.

``guards.BanGuards`` replaces the banned Python names (``F.scaled_dot_product_attention``
in every module that binds it) and so gives the best message, but the same computation has
other doors: ``torch.ops.aten.scaled_dot_product_attention``, ``torch._C._nn.…``,
``torch._scaled_dot_product_flash_attention_for_cpu``, a guard's closure, C++. Every one of
them ends in a call of an aten operator through PyTorch's dispatcher. This module puts a
Python kernel for each operator that implements a banned API
(``contract.BANNED_OPERATORS``) at the dispatch key ``PreDispatch``, which every other
operator falls through and which is switched on (thread-locally) only while the worker
answers a request (:meth:`OperatorGuard.watching`) and, for good, in every thread started
after the worker's set-up (:func:`guard_new_threads`: ``threading``, thread pools and
``_thread``; forked children inherit the forking thread's), which is judged with the code that
started it (:mod:`~autograder.sandbox.threads`). So:

* ops that are not banned cost nothing (no Python per op, unlike a ``TorchDispatchMode``);
* the kernel sees composite operators (``aten::scaled_dot_product_attention``) *before*
  they decompose into matmul and softmax, at any call depth, from Python or C++;
* it refuses the op (:class:`~autograder.sandbox.guards.BannedAPIError`) when the Python
  stack holds code of a student file whose exercise bans it, or student-made code of no
  known file (``exec``/``compile`` with an invented name: all loaded exercises' bans apply);
  otherwise (the kit's support code, an exercise without that ban) it runs the op as usual;
* a refusal is also recorded: the request fails even if the student's code caught the
  error (:meth:`OperatorGuard.watching` raises on the way out).

What it cannot see is listed in ``docs/ARCHITECTURE.md`` ("Banned APIs: three layers (and NumPy only)").
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Iterator

import torch

from autograder.sandbox import threads, trust
from autograder.sandbox.guards import BannedAPIError

_KEY = torch._C.DispatchKey.PreDispatch


@dataclass(frozen=True)
class Violation:
    """One banned operator reached from student code."""
    exercise: str                # "ex5"
    api: str                     # "torch.nn.functional.scaled_dot_product_attention"
    op: str                      # "aten::scaled_dot_product_attention"
    where: str                   # "lstm_vs_attention.py line 152" or ""

    def message(self) -> str:
        short = self.api.rsplit(".", 1)[-1]
        where = f", called from {self.where}" if self.where else ""
        return (f"{self.exercise} forbids {short} ({self.api}; found at the operator level: "
                f"{self.op}{where}). Write this part with matrix products and a softmax yourself")


def _attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None = None,
               dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
               enable_gqa: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention as ``F.scaled_dot_product_attention`` defines it, in plain
    operators: (output (..., L, Ev), weights (..., L, S), scores (..., L, S)). A boolean mask
    keeps True; a float mask is added to the scores."""
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(repeat, dim=-3), value.repeat_interleave(repeat, dim=-3)
    scores = query @ key.transpose(-2, -1) * scale                                   # (..., L, S)
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        scores = (scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
                  else scores + attn_mask)
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = torch.dropout(weights, dropout_p, True)
    return weights @ value, weights, scores


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
    return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)[0]


def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, dropout_mask=None, *,
               scale=None, enable_gqa=False):
    output, weights, _ = _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return output, weights


def _sdpa_flash_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    output, _, scores = _attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    return output, torch.logsumexp(scores, dim=-1).to(torch.float32)


# Operators whose own kernel is replaced in a worker that bans them, on the key they compute
# with (their CPU or composite kernel), so no change of the thread's dispatch state skips the
# judgement: the attention family, which plain operators compute just as well where the ban
# allows it (ex5 outside AttentionClassifier). Other banned operators (the fused MHA and
# transformer kernels) keep the PreDispatch kernel alone: they are reached from Python through
# the modules the Python-level guard refuses.
_BACKSTOPS: dict[str, tuple[str, Callable[..., Any]]] = {
    "scaled_dot_product_attention": ("CompositeImplicitAutograd", _sdpa),
    "_scaled_dot_product_attention_math": ("CompositeImplicitAutograd", _sdpa_math),
    "_scaled_dot_product_flash_attention_for_cpu": ("CPU", _sdpa_flash_cpu),
}


def guard_new_threads() -> None:
    """Every thread started from now on runs with the guard's dispatch key included, and
    remembers who started it (:mod:`~autograder.sandbox.threads`): a banned operator reached
    from a thread student code started is judged as that student code."""
    threads.run_in_every_thread(lambda: torch._C._IncludeDispatchKeyGuard(_KEY))
    threads.install()


class OperatorGuard:
    """Per worker: which student file bans which operator, the kernels, the violations."""

    def __init__(self, strict: bool = False) -> None:
        self._files: dict[str, dict[str, tuple[str, str]]] = {}   # op -> {filename: (exercise, api)}
        self._exercises: dict[str, str] = {}                        # student filename -> exercise id
        self._scoped: set[str] = set()            # files whose ban covers part of them only
        # a worker: a banned operator with no student file on the stack is the student's too
        # (neither the kit nor a library runs one there of its own accord)
        self.strict = strict
        self._library: Any = None
        self._installed: set[str] = set()
        self._violations: list[str] = []          # messages of this request's refusals

    # -- set-up (before the student file's code runs)
    def ban(self, filename: str, exercise: str, operators: dict[str, str], scoped: bool = False) -> None:
        """``filename`` (a student file of ``exercise``) may not reach ``operators``
        (``aten name -> banned API``; ``scoped``: only from the part of the file its scope probe
        names); kernels are installed once per operator."""
        self._exercises[filename] = exercise
        if scoped:
            self._scoped.add(filename)
        for op, api in operators.items():
            if self._install(op):
                self._files.setdefault(op, {})[filename] = (exercise, api)

    def _install(self, op: str) -> bool:
        if op in self._installed:
            return True
        try:
            packet = getattr(torch.ops.aten, op)
        except (AttributeError, RuntimeError):
            return False                  # not in this torch: nothing to guard
        if self._library is None:
            self._library = torch.library.Library("aten", "IMPL")
        for overload in packet.overloads():
            self._library.impl(f"{op}.{overload}" if overload != "default" else op,
                               self._kernel(op, getattr(packet, overload)), "PreDispatch")
        if op in _BACKSTOPS:
            key, implementation = _BACKSTOPS[op]
            self._library.impl(op, self._backstop(op, implementation), key)
        self._installed.add(op)
        return True

    def _backstop(self, op: str, implementation: Callable[..., Any]) -> Callable:
        """The operator's own kernel replaced (``_BACKSTOPS``): judged like the PreDispatch
        kernel, whatever the thread's dispatch state (``torch._C._disabled_torch_dispatch_impl``,
        ``_DisableTorchDispatch`` and ``_ExcludeDispatchKeyGuard`` drop PreDispatch; nothing drops
        the kernel an operator computes with); where the ban allows the call, the attention is
        computed with plain operators (:func:`_attention`)."""
        def backstop(*args: Any, **kwargs: Any) -> Any:
            if not self.strict and not threads.answering():     # in-process grading: the grader's own call
                return implementation(*args, **kwargs)
            violation = self._judge(op, sys._getframe(1))
            if violation is not None:
                self.record(violation.message())
                raise BannedAPIError(violation.message())
            return implementation(*args, **kwargs)

        return backstop

    def _kernel(self, op: str, overload: Any) -> Callable:
        excluded = torch._C.DispatchKeySet(_KEY)

        def kernel(*args: Any, **kwargs: Any) -> Any:
            violation = self._judge(op, sys._getframe(1))
            if violation is not None:
                self.record(violation.message())
                raise BannedAPIError(violation.message())
            with torch._C._ExcludeDispatchKeyGuard(excluded):
                return overload(*args, **kwargs)

        return kernel

    # -- the decision, only ever made for a banned operator
    def _judge(self, op: str, frame: FrameType | None) -> Violation | None:
        banning = self._files.get(op, {})
        if not banning:
            return None
        # the code the request ran (frames below the request's own never count), and, in a
        # thread, the code that started it: threads.culprit
        blamed = threads.culprit(frame, banning, self._exercises, self._scoped, strict=self.strict)
        if blamed is None:
            return None
        exercise, api = banning.get(blamed.filename) or sorted(banning.values())[0]
        where = (f"{blamed.filename} line {blamed.line}" if blamed is not threads.AFTER_RETURN
                 else "code that ran after your function returned, when the grader read its result")
        return Violation(exercise, api, f"aten::{op}", where)

    # -- one request
    def record(self, message: str) -> None:
        """A refusal by another layer (``guards.BanGuards``): the request fails too."""
        self._violations.append(message)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Banned operators refused while the body runs; if any was refused (even with the
        error caught by the student's code), leaving raises :class:`BannedAPIError`."""
        self._violations.clear()
        stop = sys._getframe(1)
        while stop is not None and stop.f_code.co_filename == contextlib.__file__:
            stop = stop.f_back
        try:
            # frames below the request's (the worker's loop, a bootstrap) never count
            with threads.request_boundary(stop), torch._C._IncludeDispatchKeyGuard(_KEY):
                yield
        finally:
            if self._violations:
                first = self._violations[0]
                self._violations.clear()
                raise BannedAPIError(first)
