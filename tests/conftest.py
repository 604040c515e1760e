"""Start the sandbox's fork server before any test imports the reference or runs torch.

Production graders grade once per process and start the zygote first thing. This test
process grades hundreds of times after loading everything, so it does the same up front:
workers are then forked from a process that holds no reference code and has no torch
thread pool running (see ``autograder.sandbox.forkserver.shared``).

The isolation level is probed here too, once, before any test can monkeypatch what the probe
uses (``limits.unshare``): the probe's answer is cached for the whole process.
"""
from autograder.sandbox import forkserver, levels

levels.detect()
forkserver.shared()
