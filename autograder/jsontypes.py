"""Names for the kit's JSON-shaped data, so that a signature says what a mapping is.

``JSONObject`` is a decoded JSON object: results.json and its parts, a wire header, a line of
the warm graders' or the zygote's protocol, the plain data a support helper returns from the
worker. Records the kit builds itself are dataclasses; these are what it reads or writes as
JSON.
"""
from __future__ import annotations

from typing import Any

JSONObject = dict[str, Any]
