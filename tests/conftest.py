"""Start the sandbox's fork server before any test imports the reference or runs torch.

Production graders grade once per process and start the zygote first thing. This test
process grades hundreds of times after loading everything, so it does the same up front:
workers are then forked from a process that holds no reference code and has no torch
thread pool running (see ``autograder.sandbox.forkserver.shared``).

The isolation level is probed here too, once, before any test can monkeypatch what the probe
uses (``mounts.unshare``): the probe's answer is cached for the whole process.
"""
from autograder.sandbox import forkserver, levels

levels.detect()
forkserver.shared()


# The slowest files first: with `pytest -n 2 --dist loadfile` (make test) a file is handed to
# a free process in collection order, so a long file collected last would run alone at the end.
SLOW_FIRST = ("test_replica.py", "test_suites_corpus.py", "test_notebooks.py", "test_lifetime.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))   # stable: order kept within
