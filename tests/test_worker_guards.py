"""The worker's run-time defences (autograder/sandbox/guards.py), in a fresh interpreter each:
they patch torch and the support classes of the process they run in, which must not be
pytest's own."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = '''
import json, numpy as np, torch
from autograder.sandbox import wire
from autograder.sandbox.worker import Server
server = Server()

def load(name, source):
    reply, _ = server.handle_frame({"op": "load", "name": name, "filename": name + ".py",
                                    "source": source}, [])
    assert "ok" in reply, reply

def call(target, path, *args):
    enc = wire.Encoder(to_ref=lambda o: o if isinstance(o, dict) and "R" in o else None)
    tree = enc.encode(list(args))
    reply, buffers = server.handle_frame({"op": "call", "target": {"R": target, "path": path},
                                          "args": tree, "kwargs": {"D": []}}, enc.buffers)
    if "error" in reply:
        return {"error": reply["error"]["type"], "message": reply["error"]["message"]}
    return wire.Decoder(buffers, from_handle=lambda n: n["type"]).decode(reply["ok"])
'''


def run(body: str) -> dict:
    code = PRELUDE + body
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_banned_calls_fail_only_from_files_that_ban_them():
    out = run('''
body = """
import torch
_T = torch
def sdpa(q):
    return getattr(_T.nn.functional, "scaled_dot_product_" + "attention")(q, q, q)
def mha():
    return _T.nn.MultiheadAttention(4, 2)
def subclass():
    class Mine(torch.nn.MultiheadAttention):
        pass
    return Mine(4, 2)
def encoder_layer():          # torch builds a MultiheadAttention inside: asked for by this file
    return torch.nn.TransformerEncoderLayer(4, 2)
"""
load("attention", body)        # ex1 bans sdpa and MultiheadAttention
load("visualize", body)        # ex2 bans nothing
q = torch.ones(1, 2, 4)
result = {f"{m}.{f}": call("m:" + m, [f], *([q] if f == "sdpa" else []))
          for m in ("attention", "visualize") for f in ("sdpa", "mha", "subclass", "encoder_layer")}
result["kit"] = list(torch.nn.functional.scaled_dot_product_attention(q, q, q).shape)
print(json.dumps(result, default=str))
    ''')
    for name in ("sdpa", "mha", "subclass"):
        assert out[f"attention.{name}"]["error"] == "BannedAPIError", out
        assert "is not allowed in this exercise" in out[f"attention.{name}"]["message"]
        assert not (isinstance(out[f"visualize.{name}"], dict) and "error" in out[f"visualize.{name}"]), out
    assert "scaled_dot_product_attention" in out["attention.sdpa"]["message"]
    assert "torch.nn.MultiheadAttention" in out["attention.mha"]["message"]
    # a banned class built by torch's own code, at the student file's request, as the operator
    # layer would refuse the layer's forward; a file without the ban builds it
    assert out["attention.encoder_layer"]["error"] == "BannedAPIError", out
    assert out["visualize.encoder_layer"] == "TransformerEncoderLayer"
    assert out["kit"] == [1, 2, 4]


def test_support_code_ignores_rebound_globals():
    out = run('''
load("attention", """
import numpy as np
import autograder.support.autograd as A
A._copy = lambda value: np.arange(3.0)
np.copy = lambda a, *args, **kwargs: np.arange(3.0)
def in_place(x):
    x -= 1.0
    return x
def pure(x):
    return x - 1.0
""")
x = np.arange(3.0)
bad = call("support", ["autograd", "call_returning_arguments"], {"R": "m:attention", "path": ["in_place"]}, [x])
good = call("support", ["autograd", "call_returning_arguments"], {"R": "m:attention", "path": ["pure"]}, [x])
print(json.dumps({"bad": [a.tolist() for a in bad[1]], "good": [a.tolist() for a in good[1]]}))
    ''')
    assert out["bad"] == [[-1.0, 0.0, 1.0]] and out["good"] == [[0.0, 1.0, 2.0]]


FORGED_FIGURES = '''
load("attention", """
import autograder.support.figures as F
F.describe_figure = lambda *args, **kwargs: {"forged": True}
""")
print(json.dumps(call("support", ["figures", "describe_figure"], None)))
'''


def test_a_helper_the_snapshot_lacks_is_refused_not_taken_from_the_live_module():
    """A worker that does not draw holds no figure inspector in its pristine snapshot (the
    drawing helpers come with the ``figures`` warm-up only). A student file that imports it
    and replaces ``describe_figure`` afterwards does not get its function called through the
    kit's support path: the path is refused. In a worker warmed for drawing, the same path
    runs the pristine inspector (which fails on ``None`` in its own way)."""
    refused = run(FORGED_FIGURES)
    assert refused["error"] == "LookupError" and "not loaded in this worker" in refused["message"], refused
    pristine = run("from autograder.sandbox import worker\nworker.warm_up(('figures',))\nserver = Server()\n"
                   + FORGED_FIGURES)
    assert pristine != {"forged": True} and pristine.get("error") not in (None, "LookupError"), pristine
