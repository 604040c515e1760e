"""The worker's global numerical state, taken before student code runs and put back before
every request the worker answers (``worker.py``: every call, and every test's ``seed``).

A student file may change, at import or in any call, state that every later computation in the
worker shares: the kit's own support code (its tiny language model, its training loop, its
probes) as much as the next test's calls. A ``torch.set_default_dtype(torch.float64)`` at
import made ex4's model of the kit a float64 one. What is reset:

* torch: default dtype, default device (and any torch-function mode left on the stack, as
  ``with torch.device(...)`` entered and never left), grad mode, inference mode, anomaly
  detection, deterministic algorithms, intra-op threads, print options, autocast (enabled,
  dtype, cache), flush-denormal, float32 matmul precision, the oneDNN and opt_einsum switches;
* NumPy: floating-point error handling (``np.seterr``, ``np.seterrcall``) and print options;
* Python: the warnings filters and the recursion limit.

Not reset: torch's inter-op thread count (fixed once work has started), and anything a file
does to the worker's Python objects themselves (see docs/ARCHITECTURE.md, "What is not
caught"). The functions used are taken when this module is imported, before any student code:
replacing ``torch.set_default_dtype`` from a student file does not stop the reset.
"""
from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

_C = torch._C
_SETTERS = {
    "default_dtype": torch.set_default_dtype, "default_device": torch.set_default_device,
    "grad": _C._set_grad_enabled, "anomaly": torch.autograd.set_detect_anomaly,
    "deterministic": torch.use_deterministic_algorithms, "threads": torch.set_num_threads,
    "printoptions": torch.set_printoptions, "autocast": torch.set_autocast_enabled,
    "autocast_dtype": torch.set_autocast_dtype, "autocast_cache": torch.set_autocast_cache_enabled,
    "flush_denormal": torch.set_flush_denormal, "matmul": torch.set_float32_matmul_precision,
    "mkldnn": _C._set_mkldnn_enabled, "np_err": np.seterr, "np_errcall": np.seterrcall,
    "np_print": np.set_printoptions, "recursion": sys.setrecursionlimit,
}
_POP_MODE = _C._pop_torch_function_stack
_MODES = _C._len_torch_function_stack
_INFERENCE_OFF = _C._InferenceMode
_AUTOCAST_DEVICES = ("cpu",)


@dataclass
class GlobalState:
    """What the worker's shared state was before any student code; :meth:`restore` puts it back."""
    values: dict[str, Any] = field(default_factory=dict)
    modes: int = 0
    warning_filters: list | None = None                  # None: the warnings are not the worker's to reset
    _guards: list = field(default_factory=list)          # inference mode switched off, held

    @classmethod
    def take(cls, warnings_too: bool = True) -> "GlobalState":
        """The state now. ``warnings_too=False`` in the grader's own process (the in-process
        backend), whose warnings filters belong to pytest."""
        from torch._tensor_str import PRINT_OPTS
        import torch.backends.opt_einsum as opt_einsum

        values = {
            "default_dtype": torch.get_default_dtype(), "default_device": torch.get_default_device(),
            "grad": torch.is_grad_enabled(), "anomaly": (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
            "deterministic": (torch.are_deterministic_algorithms_enabled(),
                              torch.is_deterministic_algorithms_warn_only_enabled()),
            "threads": torch.get_num_threads(), "printoptions": dict(vars(PRINT_OPTS)),
            "autocast": {d: torch.is_autocast_enabled(d) for d in _AUTOCAST_DEVICES},
            "autocast_dtype": {d: torch.get_autocast_dtype(d) for d in _AUTOCAST_DEVICES},
            "autocast_cache": torch.is_autocast_cache_enabled(), "flush_denormal": False,
            "matmul": torch.get_float32_matmul_precision(), "mkldnn": torch.backends.mkldnn.enabled,
            "opt_einsum": (opt_einsum.enabled, opt_einsum.strategy),
            "np_err": np.geterr(), "np_errcall": np.geterrcall(), "np_print": np.get_printoptions(),
            "recursion": sys.getrecursionlimit(),
        }
        return cls(values, _MODES(), list(warnings.filters) if warnings_too else None)

    def restore(self) -> list[str]:
        """Put every piece back; the names of those that could not be (never raises)."""
        failed = []
        for name, step in self._steps():
            try:
                step()
            except Exception:  # noqa: BLE001 - one piece that cannot be reset spoils no other
                failed.append(name)
        return failed

    def _steps(self) -> list[tuple[str, Callable[[], None]]]:
        """Each piece as (name, put it back); a setter runs only where its getter differs (some,
        like the deterministic switch, cost a millisecond)."""
        from torch._tensor_str import PRINT_OPTS
        v, s = self.values, _SETTERS

        def when(changed: Callable[[], bool], action: Callable[[], object]) -> Callable[[], None]:
            return lambda: changed() and action() and None

        return [
            ("modes", self._pop_modes),
            ("default_device", when(lambda: torch.get_default_device() != v["default_device"],
                                    lambda: s["default_device"](None if str(v["default_device"]) == "cpu"
                                                                else v["default_device"]) or True)),
            ("default_dtype", when(lambda: torch.get_default_dtype() != v["default_dtype"],
                                   lambda: s["default_dtype"](v["default_dtype"]) or True)),
            ("grad", lambda: s["grad"](v["grad"])),
            ("inference", self._inference_off),
            ("anomaly", when(lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) != v["anomaly"],
                             lambda: s["anomaly"](v["anomaly"][0], check_nan=v["anomaly"][1]) or True)),
            ("deterministic", when(lambda: (torch.are_deterministic_algorithms_enabled(),
                                            torch.is_deterministic_algorithms_warn_only_enabled()) != v["deterministic"],
                                   lambda: s["deterministic"](v["deterministic"][0],
                                                              warn_only=v["deterministic"][1]) or True)),
            ("threads", when(lambda: torch.get_num_threads() != v["threads"], lambda: s["threads"](v["threads"]) or True)),
            ("printoptions", when(lambda: vars(PRINT_OPTS) != v["printoptions"],
                                  lambda: s["printoptions"](**v["printoptions"]) or True)),
            ("autocast", lambda: [s["autocast"](d, on) for d, on in v["autocast"].items()]),
            ("autocast_dtype", lambda: [s["autocast_dtype"](d, t) for d, t in v["autocast_dtype"].items()]),
            ("autocast_cache", lambda: s["autocast_cache"](v["autocast_cache"])),
            ("flush_denormal", lambda: s["flush_denormal"](v["flush_denormal"])),
            ("matmul", when(lambda: torch.get_float32_matmul_precision() != v["matmul"],
                            lambda: s["matmul"](v["matmul"]) or True)),
            ("mkldnn", lambda: s["mkldnn"](v["mkldnn"])),
            ("opt_einsum", self._opt_einsum),
            ("np_err", when(lambda: np.geterr() != v["np_err"], lambda: s["np_err"](**v["np_err"]) or True)),
            ("np_errcall", when(lambda: np.geterrcall() is not v["np_errcall"],
                                lambda: s["np_errcall"](v["np_errcall"]) or True)),
            ("np_print", when(lambda: np.get_printoptions() != v["np_print"],
                              lambda: s["np_print"](**v["np_print"]) or True)),
            ("recursion", lambda: s["recursion"](v["recursion"])),
            ("warnings", self._warnings),
        ]

    def _pop_modes(self) -> None:
        while _MODES() > self.modes:
            _POP_MODE()

    def _inference_off(self) -> None:
        if torch.is_inference_mode_enabled():         # a student's guard still alive: ours inside it
            guard = _INFERENCE_OFF(False)
            guard.__enter__()
            self._guards.append(guard)

    def _opt_einsum(self) -> None:
        import torch.backends.opt_einsum as opt_einsum
        if (opt_einsum.enabled, opt_einsum.strategy) != self.values["opt_einsum"]:
            opt_einsum.enabled, opt_einsum.strategy = self.values["opt_einsum"]

    def _warnings(self) -> None:
        if self.warning_filters is None or warnings.filters == self.warning_filters:
            return
        warnings.filters[:] = self.warning_filters
        mutated = getattr(warnings, "_filters_mutated", None)   # the module's cache of the filters
        if mutated is not None:
            mutated()
