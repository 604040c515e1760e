"""Text that crosses into the grader, made safe where it enters.

Everything a submission can put into a string (exception messages, printed output, file and
folder names, notebook text, worker replies) passes through one of these before the grader
keeps it:

* :func:`text` - multi-line text (a message, captured output): line breaks normalised to
  ``\\n``, tabs kept, every other control character, bidirectional override and lone surrogate
  shown as a visible escape (``\\x01``, ``\\u202e``; an undecodable byte smuggled in by
  ``os.fsdecode`` as ``\\xdc``), capped in UTF-8 **bytes**;
* :func:`one_line` - the same on one line (line breaks shown as ``\\n``), for summaries,
  terminals and table cells;
* :func:`name` - a file or folder name, escaped *reversibly* (a backslash becomes ``\\\\``;
  :func:`name_bytes` gives the original bytes back), on one line;
* :func:`from_bytes` - raw bytes (a pipe, a notebook file): UTF-8, undecodable bytes as ``\\xNN``.

The result of each is valid UTF-8 (no surrogates), so ``json.dump(..., ensure_ascii=False)``
and ``open(..., encoding="utf-8")`` can never fail on it, and it is idempotent: made safe
twice, a string does not change. Ordinary text (letters of any script, ``·``, ``…``, ``≈``,
emoji) passes unchanged.
"""
from __future__ import annotations

import os
import re

# C0/C1 controls except \t \n, DEL, line/paragraph separators, bidi marks and overrides,
# zero-width joiners' dangerous cousins, and lone surrogates.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                     r"\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
ELLIPSIS = "…"


def escape_char(char: str) -> str:
    """The visible escape of one unsafe character: ``\\xNN`` below 256 and for a surrogate
    that stands for an undecodable byte (``os.fsdecode``'s U+DC80..U+DCFF), else ``\\uNNNN``."""
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


def from_bytes(data: bytes | bytearray) -> str:
    """Raw bytes as text: UTF-8, each undecodable byte as ``\\xNN`` (not yet :func:`text`)."""
    return bytes(data).decode("utf-8", "backslashreplace")


def _as_str(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        return from_bytes(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            return from_bytes(value)
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__ costs only its text
        return f"<{type(value).__name__}>"


def cap(value: str, limit: int | None, marker: str = ELLIPSIS) -> str:
    """``value`` cut to at most ``limit`` UTF-8 bytes, ``marker`` included (never inside a
    character). ``None``: no cap."""
    if limit is None:
        return value
    data = value.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return value
    if len(marker.encode("utf-8")) > limit:
        marker = ""
    room = max(0, limit - len(marker.encode("utf-8")))
    return data[:room].decode("utf-8", "ignore") + marker


def text(value: object, limit: int | None = None) -> str:
    """Multi-line text from a submission: line breaks normalised to ``\\n``, every other
    unsafe character escaped, at most ``limit`` UTF-8 bytes."""
    lines = _LINE_BREAKS.split(_as_str(value))
    return cap("\n".join(_UNSAFE.sub(lambda m: escape_char(m.group()), line) for line in lines), limit)


def one_line(value: object, limit: int | None = 300) -> str:
    """One line of a summary, a terminal or a table: line breaks shown as ``\\n``/``\\r``
    (so nothing starts a line of its own), other unsafe characters escaped, at most ``limit``
    UTF-8 bytes."""
    string = _LINE_BREAKS.sub(lambda m: "".join(escape_char(c) for c in m.group()), _as_str(value))
    return cap(_UNSAFE.sub(lambda m: escape_char(m.group()), string), limit)


def name(value: object, limit: int | None = 300) -> str:
    """A file or folder name (``str`` from ``os.fsdecode`` or ``bytes``), on one line,
    escaped reversibly: ``\\`` as ``\\\\``, ``\\n``/``\\r``/``\\t`` by name, every other unsafe
    character and every undecodable byte as the ``\\xNN`` of its bytes. :func:`name_bytes`
    reverses it. Past ``limit`` bytes it is cut (then ``…`` ends it)."""
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    else:
        string = _as_str(value)
        try:
            raw = os.fsencode(string)
        except UnicodeEncodeError:                    # a lone surrogate not from fsdecode
            raw = string.encode("utf-8", "surrogatepass")
    out = []
    for char in raw.decode("utf-8", "surrogateescape"):
        if char == "\\":
            out.append("\\\\")
        elif char in _NAMED:
            out.append(_NAMED[char])
        elif 0xDC80 <= ord(char) <= 0xDCFF:
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif _UNSAFE.match(char):
            out.append("".join(f"\\x{b:02x}" for b in char.encode("utf-8")))
        else:
            out.append(char)
    return cap("".join(out), limit)


def name_bytes(escaped: str) -> bytes:
    """The original bytes of a name escaped by :func:`name` (the reverse of it)."""
    out = bytearray()
    i = 0
    while i < len(escaped):
        char = escaped[i]
        if char == "\\" and i + 1 < len(escaped):
            kind = escaped[i + 1]
            if kind == "\\":
                out += b"\\"
                i += 2
                continue
            if kind in "nrt":
                out += {"n": b"\n", "r": b"\r", "t": b"\t"}[kind]
                i += 2
                continue
            if kind == "x":
                out.append(int(escaped[i + 2:i + 4], 16))
                i += 4
                continue
            if kind == "u":
                out += chr(int(escaped[i + 2:i + 6], 16)).encode("utf-8")
                i += 6
                continue
        out += char.encode("utf-8")
        i += 1
    return bytes(out)


def scrub(data: object) -> object:
    """A JSON-able tree with every string (keys too) made valid UTF-8: lone surrogates and
    control characters escaped (:func:`text`, no cap). The results writer's last line of
    defence: whatever reaches it, ``json.dump`` cannot fail on a string."""
    if isinstance(data, str):
        return text(data) if _UNSAFE.search(data) or "\r" in data else data
    if isinstance(data, dict):
        return {scrub(k): scrub(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [scrub(v) for v in data]
    return data


def utf8_len(value: str) -> int:
    """Length of ``value`` in UTF-8 bytes."""
    return len(value.encode("utf-8", "surrogatepass"))
