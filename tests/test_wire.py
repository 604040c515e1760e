"""Hostile frames from the worker: decoding is bounded by what was received, and every parse
failure is a ``WireError`` (which kills that worker and costs that call), never another
exception and never unbounded memory."""
from __future__ import annotations

import json
import socket
import struct
import threading
import tracemalloc

import numpy as np
import pytest
import torch

from autograder.sandbox import protocol, wire


def raw_frame(head: bytes, buffers: list[bytes] = ()) -> bytes:
    parts = [struct.pack("<I", len(head)), head, struct.pack("<I", len(buffers))]
    for buf in buffers:
        parts += [struct.pack("<Q", len(buf)), buf]
    return b"".join(parts)


def receive(frame: bytes, **limits) -> tuple[dict, list[bytes]]:
    a, b = socket.socketpair()

    def send() -> None:
        try:
            a.sendall(frame)
            a.shutdown(socket.SHUT_WR)
        except OSError:
            pass                                   # the reader gave up early: fine

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        return wire.recv(b, **limits)
    finally:
        b.close()
        sender.join(5)
        a.close()


def reply_limits() -> dict:
    return {"limit": wire.MAX_REPLY_BYTES, "header_limit": wire.MAX_REPLY_HEADER_BYTES}


# --------------------------------------------------------------------------- headers

@pytest.mark.parametrize("head", [
    b"[" * 200_000 + b"]" * 200_000,                         # RecursionError in json
    b'{"ok": ' + b'{"L": [' * 5_000 + b"]}" * 5_000 + b"}",    # deep, but valid JSON
    b'{"ok": ' + b"9" * 5_001 + b"}",                          # ValueError: int too long
    b"NaN",                                                    # not an object
    b"[1, 2]",
    b'"just a string"',
    b"\xff\xfe not utf-8",
    b'{"ok": 1',                                               # truncated
    b"",
], ids=["deep-list", "deep-tagged", "long-int", "nan", "list", "string", "bad-utf8", "truncated",
        "empty"])
def test_malformed_headers_are_wire_errors(head):
    with pytest.raises(wire.WireError):
        receive(raw_frame(head), **reply_limits())


def test_depth_scan_ignores_brackets_inside_strings():
    text = json.dumps({"ok": "[" * 10_000 + "{" * 10_000})
    assert wire.header_depth(text.encode()) == 1
    header, _ = receive(raw_frame(text.encode()), **reply_limits())
    assert header["ok"].startswith("[[[")


def test_escaped_quotes_do_not_hide_brackets():
    # the string ends after the escaped backslash; the brackets after it are structure
    head = b'{"a": "x\\\\", "b": ' + b"[" * 5_000 + b"]" * 5_000 + b"}"
    assert wire.header_depth(head) > wire.MAX_HEADER_DEPTH
    with pytest.raises(wire.WireError):
        receive(raw_frame(head), **reply_limits())


def test_honest_nesting_still_crosses():
    value: object = 1
    for _ in range(wire.MAX_DEPTH - 1):
        value = [value]
    enc = wire.Encoder()
    tree = enc.encode(value)
    header, buffers = receive(wire.pack({"ok": tree}, enc.buffers), **reply_limits())
    assert wire.Decoder(buffers).decode(header["ok"]) == value


def test_nan_and_big_but_sane_ints_cross():
    enc = wire.Encoder()
    tree = enc.encode([float("nan"), float("inf"), 10 ** 300])
    header, buffers = receive(wire.pack({"ok": tree}, enc.buffers), **reply_limits())
    out = wire.Decoder(buffers).decode(header["ok"])
    assert np.isnan(out[0]) and out[1] == float("inf") and out[2] == 10 ** 300


# --------------------------------------------------------------------------- replies

@pytest.mark.parametrize("header", [
    {"ok": 1, "error": {}},
    {"error": "a string"},
    {"error": {"kind": 5}},
    {"error": {"kind": "exception", "where": [1, 2]}},
    {"error": {"kind": "exception", "where": [["f.py", "1", "f", "x"]]}},
    {"error": {"kind": "exception", "surprise": True}},
    {"something": "else"},
    {},
])
def test_malformed_replies_are_wire_errors(header):
    with pytest.raises(wire.WireError):
        protocol.Reply.from_frame(header, [])


def test_error_records_are_clipped():
    record = {"kind": "exception", "type": "ValueError", "message": "m" * 100_000,
              "where": [["attention.py", 3, "f", "x = 1"]] * 100}
    clean = protocol.Reply.from_frame({"error": record}, []).error
    assert len(clean.message) <= 4000 and len(clean.where) <= 16
    assert clean.kind is protocol.ErrorKind.EXCEPTION and clean.type == "ValueError"
    assert protocol.Reply.from_frame({"ok": {"L": []}}, []).value == {"L": []}


@pytest.mark.parametrize("header", [
    {"op": "explode"},
    {"op": "load", "name": 1, "filename": "a.py", "source": ""},
    {"op": "call", "target": {"R": 3}},
    {"op": "getattr", "target": {"R": "m:x", "path": ["a", 2]}},
    {"op": "seed", "seed": 7},                                      # a seed rides on a call
    {"op": "call", "target": {"R": "m:x"}, "seed": "7"},
    {"op": "getattr", "target": {"R": "m:x"}, "seed": 7.0},
])
def test_malformed_requests_are_wire_errors(header):
    with pytest.raises(wire.WireError):
        protocol.request_from_frame(header, [])


def test_requests_round_trip_through_frames():
    call = protocol.Call(protocol.Ref.module("attention").attr("softmax"), {"L": [1]}, {"D": []}, (b"x",))
    again = protocol.request_from_frame(*call.to_frame())
    assert again.target == call.target and again.args == {"L": [1]} and again.buffers == (b"x",)
    for request in (protocol.Load("attention", "attention.py", "x = 1"),
                    protocol.Load("attention", "attention.py", "x = 1\n\ny = 2\n", cells=(1, 3)),
                    protocol.Call(protocol.Ref.module("attention").attr("f"), seed=7),
                    protocol.GetAttr(protocol.Ref.support().attr("lm")),
                    protocol.GetAttr(protocol.Ref.support().attr("lm"), seed=2**40)):
        assert protocol.request_from_frame(*request.to_frame()) == request


def test_a_reply_carries_a_note_beside_its_value_only():
    stopped = protocol.WorkerError(protocol.ErrorKind.EXCEPTION, "ValueError", "demo",
                                   (protocol.Frame("attention.py", 9, "<module>", "f(0)"),))
    reply = protocol.Reply(value={"H": 1}, note=stopped)
    again = protocol.Reply.from_frame(*reply.to_frame())
    assert again.note == stopped and again.value == {"H": 1}
    with pytest.raises(protocol.WireError):
        protocol.Reply.from_frame({"error": stopped.to_json(), "note": stopped.to_json()}, [])


@pytest.mark.parametrize("cells", [[0], [3, 2], [1, 1], ["1"], [1.0], [True], {"1": 1}, list(range(1, 100_002))])
def test_a_load_with_malformed_cell_lines_is_refused(cells):
    header = {"op": "load", "name": "attention", "filename": "attention.py", "source": "x = 1\n", "cells": cells}
    with pytest.raises(protocol.WireError):
        protocol.request_from_frame(header, [])


# --------------------------------------------------------------------------- decoding is bounded

def test_one_buffer_referenced_many_times_is_refused():
    buf = bytes(1 << 20)
    tree = {"L": [{"A": 0, "dtype": "<f4", "shape": [1 << 18]}] * 2_000}
    header, buffers = receive(raw_frame(json.dumps({"ok": tree}).encode(), [buf]), **reply_limits())
    tracemalloc.start()
    try:
        with pytest.raises(wire.WireError, match="more than once"):
            wire.Decoder(buffers).decode(header["ok"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * (1 << 20), f"decoding peaked at {peak / 2**20:.0f} MB"


@pytest.mark.parametrize("tag", ["A", "X", "B"])
def test_every_buffer_tag_counts_once(tag):
    node = {tag: 0, "dtype": "<f4" if tag == "A" else "float32", "shape": [2]}
    with pytest.raises(wire.WireError):
        wire.Decoder([bytes(8)]).decode({"T": [node, node]})
    assert len(wire.Decoder([bytes(8)]).decode({"T": [node]})) == 1


@pytest.mark.parametrize("tree", [
    {"A": 0, "dtype": "<f4", "shape": [3]},                   # size mismatch
    {"A": 0, "dtype": "|O", "shape": [1]},                    # object dtype
    {"A": 0, "dtype": "<f4", "shape": [2 ** 62, 0]},          # absurd dimension
    {"A": 0, "dtype": "<f4", "shape": [True, 2]},             # bool is not a dimension
    {"A": 0, "dtype": "<f4", "shape": "2"},
    {"A": True, "dtype": "<f4", "shape": [2]},                # bool is not an index
    {"X": 0, "dtype": "float32", "shape": [[2]]},
    {"X": 0, "dtype": "torch.float32", "shape": [2]},
    {"C": ["1", 2]},
    {"D": [["k"]]},
    {"D": [[{"L": []}, 1]]},
    {"Q": 1},
    [1, 2],
])
def test_decoder_rejects_malformed_values(tree):
    with pytest.raises(wire.WireError):
        wire.Decoder([bytes(8)]).decode(tree)


def test_a_valid_reply_still_round_trips():
    enc = wire.Encoder()
    value = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "t": torch.ones(2, dtype=torch.bfloat16),
             "b": b"xy", "c": 1 + 2j, "n": None}
    tree = enc.encode(value)
    header, buffers = receive(wire.pack({"ok": tree}, enc.buffers), **reply_limits())
    out = wire.Decoder(buffers).decode(protocol.Reply.from_frame(header, buffers).value)
    assert np.array_equal(out["w"], value["w"]) and torch.equal(out["t"], value["t"])
    assert out["b"] == b"xy" and out["c"] == 1 + 2j and out["n"] is None
