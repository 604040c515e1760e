# --- appended to a correct solution: every global torch / NumPy / Python setting a student
# file can change, changed at import (the test appends this to solutions/ex4_causal_mask/causal.py)
import sys as _sys
import warnings as _warnings

import numpy as _np
import torch as _torch

_torch.set_default_dtype(_torch.float64)
_torch.set_default_device("meta")
_torch.device("meta").__enter__()                 # a device context entered, never left
_torch.set_grad_enabled(False)
_KEEP = _torch.inference_mode()
_KEEP.__enter__()                                 # inference mode held by a live guard
_torch.autograd.set_detect_anomaly(True)
_torch.use_deterministic_algorithms(True)
_torch.set_num_threads(2)
_torch.set_printoptions(precision=1, threshold=5)
_torch.set_autocast_enabled("cpu", True)
_torch.set_autocast_dtype("cpu", _torch.bfloat16)
_torch.set_flush_denormal(True)
_torch.set_float32_matmul_precision("medium")
_torch.backends.mkldnn.enabled = False
_np.seterr(all="raise")
_np.set_printoptions(precision=2)
_warnings.simplefilter("error")
_sys.setrecursionlimit(300)
