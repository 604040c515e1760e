"""The registry: every exercise the kit knows, found in its own folder, and the rules shared
by all of them.

An exercise is one folder, ``autograder/suites/<folder>/``, whose ``exercise.py`` defines
``EXERCISE``, an :class:`~autograder.exercise.Exercise` (its registry row, its sentences of the
published contract, its coverage rows, its note for ``check``): this module finds those folders
(:func:`discover`) and nothing else in the kit names an exercise. A built Gradescope zip, a
wheel or the student release holds the folders of the exercises it was built with, so its
registry holds just those.

``EXERCISES`` is every exercise found (the release writes all of them to ``assignments/``);
``DEFAULT`` is the assignment built, graded and exported when no ``--exercises`` is given: the
exercises with ``default=True``. An exercise with ``default=False`` is opt-in (``build
--exercises ex1,…,ex6``). docs/ADDING_AN_EXERCISE.md says how to add one.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

from autograder.exercise import CONVENTIONS, Exercise, Sentence

__all__ = ["BANNED_OPERATORS", "BY_ID", "BY_MODULE", "CONVENTIONS", "DEFAULT", "EXERCISES", "Exercise",
           "Sentence", "SUITES", "banned_operators", "discover", "select"]

SUITES = Path(__file__).resolve().with_name("suites")
_ID = re.compile(r"^ex(\d+)$")


# The aten operators that implement each banned API (the same computation reached through
# ``torch.ops.aten.*``, ``torch._C._nn.*``, ``torch._*`` bindings or C++): refused at the
# operator level while the student code of an exercise banning that API is on the stack
# (``sandbox/opguard.py``), and named by the static rule when spelt out in the source
# (``intake.find_banned``). Names missing from the running torch are skipped. The
# MultiheadAttention modules reach ``scaled_dot_product_attention`` too (every exercise
# banning them bans it); with ``need_weights=True`` they run only generic operators (bmm,
# softmax): the Python-level guard is then the only layer that sees them.
_SDPA_OPS = (
    "scaled_dot_product_attention", "_fused_sdp_choice",
    "_scaled_dot_product_attention_math", "_scaled_dot_product_attention_math_for_mps",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_flash_attention_forward", "_flash_attention_forward_no_dropout_inplace",
    "_efficient_attention_forward", "_cudnn_attention_forward", "_triton_scaled_dot_attention",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward",
    "_scaled_dot_product_fused_attention_overrideable_backward",
    "_flash_attention_backward", "_efficient_attention_backward", "_cudnn_attention_backward",
)
_MHA_OPS = ("_native_multi_head_attention", "_triton_multi_head_attention")
BANNED_OPERATORS: dict[str, tuple[str, ...]] = {
    "torch.nn.functional.scaled_dot_product_attention": _SDPA_OPS,
    "torch.nn.MultiheadAttention": _MHA_OPS,
    "torch.nn.functional.multi_head_attention_forward": _MHA_OPS,
    "torch.nn.TransformerEncoderLayer": ("_transformer_encoder_layer_fwd",),
    "torch.nn.TransformerEncoder": ("_transformer_encoder_layer_fwd",),
    "torch.nn.Transformer": ("_transformer_encoder_layer_fwd",),
}


def banned_operators(ex: Exercise) -> dict[str, str]:
    """``aten operator name -> the banned API it implements`` for one exercise."""
    out: dict[str, str] = {}
    for api in ex.banned:
        for op in BANNED_OPERATORS.get(api, ()):
            out.setdefault(op, api)
    return out


def _built_points(exercises: tuple[Exercise, ...]) -> tuple[Exercise, ...]:
    """Totals from a built Gradescope zip (``build --points ex1=30``): its ``BUILD_INFO.json``.

    A checkout has no such file: ``points`` above is then the one place totals are set.
    """
    import json
    from dataclasses import replace
    from pathlib import Path

    info = Path(__file__).with_name("BUILD_INFO.json")
    if not info.is_file():
        return exercises
    points = json.loads(info.read_text(encoding="utf-8")).get("points", {})
    return tuple(replace(ex, points=float(points[ex.id])) if ex.id in points else ex
                 for ex in exercises)


def discover(suites: Path = SUITES) -> tuple[Exercise, ...]:
    """Every exercise whose folder is in ``suites`` (a folder holding ``exercise.py``), in the
    order of their ids' numbers (ex1, ex2, …, ex10)."""
    found: list[Exercise] = []
    for path in sorted(Path(suites).glob("*/exercise.py")):
        module = importlib.import_module(f"autograder.suites.{path.parent.name}.exercise")
        ex = getattr(module, "EXERCISE", None)
        if not isinstance(ex, Exercise):
            raise TypeError(f"{path}: EXERCISE must be an autograder.exercise.Exercise")
        if ex.folder != path.parent.name or not _ID.match(ex.id) or not ex.folder.startswith(ex.id + "_"):
            raise ValueError(f"{path}: the exercise {ex.id!r} (folder {ex.folder!r}) must live in "
                             f"suites/<id>_<topic>/, here {path.parent.name!r}")
        found.append(ex)
    ids = [ex.id for ex in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two exercise folders claim the same id: {sorted(ids)}")
    return tuple(sorted(found, key=lambda ex: int(_ID.match(ex.id).group(1))))


EXERCISES = _built_points(discover())
DEFAULT: tuple[Exercise, ...] = tuple(ex for ex in EXERCISES if ex.default)
BY_ID: dict[str, Exercise] = {ex.id: ex for ex in EXERCISES}
BY_MODULE: dict[str, Exercise] = {ex.module: ex for ex in EXERCISES}


def example_ids(count: int = 2) -> list[str]:
    """A few registered ids for help texts and messages (``["ex1", "ex3"]``: every other one
    from the first), so that no text of the kit names an exercise."""
    return [ex.id for ex in EXERCISES[::2][:count]]


def select(ids: str | list[str] | None) -> tuple[Exercise, ...]:
    """Exercises named by a comma list (``"ex1,ex3"``) or list, in that order; ``DEFAULT``
    when ``None``/empty; ``"all"``: every exercise the kit knows, opt-in ones included."""
    if not ids:
        return DEFAULT
    if isinstance(ids, str):
        ids = [part.strip() for part in ids.split(",") if part.strip()]
    if list(ids) == ["all"]:
        return EXERCISES
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        raise ValueError(f"unknown exercise id(s): {', '.join(unknown)}; "
                         f"known: {', '.join(BY_ID)}")
    return tuple(BY_ID[i] for i in ids)
