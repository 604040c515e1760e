"""The worker's global settings (autograder/sandbox/globalstate.py): what a student file changes
is put back before the next request. Run in a fresh interpreter (the settings are process-wide)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AT_IMPORT = Path(__file__).resolve().parent / "hostile_input" / "torch_globals" / "at_import.py"

PROBE = r'''
import json, sys, warnings
import numpy as np
import torch
from autograder.sandbox import protocol
from autograder.sandbox.worker import Server

def state():
    return {"dtype": str(torch.get_default_dtype()), "device": str(torch.get_default_device()),
            "new_tensor": f"{torch.zeros(1).dtype} {torch.zeros(1).device}",
            "grad": torch.is_grad_enabled(), "inference": torch.is_inference_mode_enabled(),
            "anomaly": torch.is_anomaly_enabled(), "deterministic": torch.are_deterministic_algorithms_enabled(),
            "threads": torch.get_num_threads(), "autocast": torch.is_autocast_enabled("cpu"),
            "matmul": torch.get_float32_matmul_precision(), "mkldnn": torch.backends.mkldnn.enabled,
            "np_err": np.geterr()["divide"], "np_precision": np.get_printoptions()["precision"],
            "torch_print": repr(torch.tensor([1.23456789])),
            "recursion": sys.getrecursionlimit(), "warnings": len(warnings.filters)}

torch.set_num_threads(1)                   # as the worker starts (forkserver._single_threaded_maths)
server = Server(watch_reach_ins=True)
before = state()
source = open(sys.argv[1]).read()
reply = server.handle(protocol.Load("causal", "causal.py", source))
assert reply.error is None, reply
spoiled = state()
reply = server.handle(protocol.GetAttr(protocol.Ref.module("causal"), seed=7))
assert reply.error is None, reply
print(json.dumps({"before": before, "spoiled": spoiled, "after": state(),
                  "failed": server.state.restore()}))
'''


def test_every_global_a_student_file_changes_is_put_back(tmp_path):
    student = tmp_path / "causal.py"
    student.write_text("import torch\n\n" + AT_IMPORT.read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(student)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    changed = {k for k in seen["before"] if seen["spoiled"][k] != seen["before"][k]}
    assert changed == set(seen["before"]), f"the case does not change {set(seen['before']) - changed}"
    assert seen["after"] == seen["before"]
    assert seen["failed"] == []
