"""The base of the kit's vocabularies: enums whose members are also the words they stand for.

A :class:`Word` member compares equal to its word, is written as its word by ``json``,
``csv``, ``str()`` and f-strings on every supported Python (3.10 has no ``enum.StrEnum``),
and is read back with ``Kind(word)``: one vocabulary, typed in the code, plain in the files.
"""
from __future__ import annotations

import enum


class Word(str, enum.Enum):
    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return format(str.__str__(self), spec)
