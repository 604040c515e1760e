# Two commands on a fresh machine:  `make`  (install + the kit's main job)  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# CPU-only PyTorch. On this kind of machine the wheel lies in /opt/wheels; elsewhere use PyTorch's CPU index.
TORCH_SPEC ?= torch==2.13.0
TORCH_FROM ?= $(if $(wildcard /opt/wheels),--find-links /opt/wheels,--extra-index-url https://download.pytorch.org/whl/cpu)

.PHONY: all install release build test check clean
# The main command: install, regenerate the student release, build dist/ (Gradescope zip,
# student release zip, other exports), then self-grade the solutions and the stubs with
# dist/autograder.zip the way Gradescope runs it (as root; otherwise `grade`, and it says so).
all: install release build

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_SPEC)" $(TORCH_FROM)
	$(PIP) install -q -e '.[dev,cluster,staff]'
	touch $@

release: install
	$(PY) -m autograder release

build: release
	$(PY) -m autograder build --out dist --self-grade

# The kit's own tests, two processes: every file a group, corpus-like files spread test by
# test (tests/conftest.py). `make check`: the quick part (no Docker replica, no real otter or
# nbgrader, no other secrets), a few minutes, for iterating.
test: install
	$(PY) -m pytest -q -n 2 --dist loadgroup $(PYTEST_ARGS)

check: install
	$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) dist
