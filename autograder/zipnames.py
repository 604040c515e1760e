"""Open a submitted zip whatever bytes its member names hold.

A zip member whose header says "UTF-8 name" (flag bit 11) but whose name is not valid UTF-8
(a cp1252 ``Übung`` zipped by a tool that sets the flag anyway) makes ``zipfile`` refuse the
whole archive with ``UnicodeDecodeError``. :func:`open_zip` then opens a copy, in memory, with
that flag cleared in every header, so the names are read as cp437 (every byte is a character,
the ASCII part of a name unchanged): ``attention.py`` under such a folder is still found.
"""
from __future__ import annotations

import io
import os
import struct
import zipfile
from pathlib import Path

MAX_PATCHED_BYTES = 64 * 1024 * 1024      # the in-memory copy (intake's total budget is lower)
_UTF8_FLAG = 0x800
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"


def open_zip(path: Path) -> zipfile.ZipFile:
    """``zipfile.ZipFile(path)``, or, when a member name is not the UTF-8 its flag promises,
    the same archive with names read as cp437. Raises what ``ZipFile`` raises otherwise."""
    try:
        return zipfile.ZipFile(path)
    except UnicodeDecodeError:
        pass
    if os.lstat(path).st_size > MAX_PATCHED_BYTES:
        raise zipfile.BadZipFile("member names are not valid UTF-8")
    with open(path, "rb") as handle:
        data = bytearray(handle.read(MAX_PATCHED_BYTES + 1))
    try:
        return zipfile.ZipFile(io.BytesIO(bytes(without_utf8_flags(data))))
    except (struct.error, IndexError) as exc:
        raise zipfile.BadZipFile(f"malformed zip ({type(exc).__name__})") from None


def without_utf8_flags(data: bytearray) -> bytearray:
    """``data`` (a whole zip) with the UTF-8 name flag cleared in the central directory and in
    the local header each of its entries points to."""
    end = data.rfind(b"PK\x05\x06")
    if end < 0 or end + 22 > len(data):
        raise zipfile.BadZipFile("no end of central directory")
    count, _size, offset = struct.unpack_from("<HII", data, end + 10)
    position = offset
    for _ in range(count):
        if data[position:position + 4] != _CENTRAL:
            raise zipfile.BadZipFile("malformed central directory")
        _clear(data, position + 8)
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, position + 28)
        (local,) = struct.unpack_from("<I", data, position + 42)
        if data[local:local + 4] == _LOCAL:
            _clear(data, local + 6)
        position += 46 + name_len + extra_len + comment_len
    return data


def _clear(data: bytearray, at: int) -> None:
    (flags,) = struct.unpack_from("<H", data, at)
    struct.pack_into("<H", data, at, flags & ~_UTF8_FLAG)


_UNICODE_PATH_EXTRA = 0x7075      # Info-ZIP's "Unicode Path" extra field


def member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its maker meant it, for messages: a name stored without the UTF-8
    flag is read as cp437 by ``zipfile`` (``M├╝ller``). Its UTF-8 reading is taken instead
    from Info-ZIP's Unicode Path extra field when its checksum matches, else from the stored
    bytes themselves when they are valid UTF-8 (``zip`` on Linux stores ``Müller`` so)."""
    if info.flag_bits & _UTF8_FLAG:
        return info.filename
    try:
        stored = info.orig_filename.encode("cp437")        # the name's bytes as stored
    except UnicodeError:
        return info.filename
    from_extra = _unicode_path_field(info.extra, stored)
    if from_extra is not None:
        return from_extra
    try:
        return stored.decode("utf-8") if not stored.isascii() else info.filename
    except UnicodeError:
        return info.filename


def _unicode_path_field(extra: bytes, stored: bytes) -> str | None:
    """The UTF-8 name in Info-ZIP's Unicode Path extra field of ``extra``, when present and its
    checksum matches the ``stored`` name."""
    at = 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        data = extra[at + 4:at + 4 + size]
        at += 4 + size
        if kind != _UNICODE_PATH_EXTRA or len(data) < 5 or data[0] != 1:
            continue
        if zipfile.crc32(stored) != struct.unpack_from("<I", data, 1)[0]:
            return None
        try:
            return data[5:].decode("utf-8")
        except UnicodeError:
            return None
    return None
