# Two commands on a fresh machine:  `make`  (install + the kit's main job)  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# CPU-only PyTorch. On this kind of machine the wheel lies in /opt/wheels; elsewhere use PyTorch's CPU index.
TORCH_SPEC ?= torch==2.13.0
TORCH_FROM ?= $(if $(wildcard /opt/wheels),--find-links /opt/wheels,--extra-index-url https://download.pytorch.org/whl/cpu)

.PHONY: all install release test clean
all: install release

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_SPEC)" $(TORCH_FROM)
	$(PIP) install -q -e '.[dev]'
	touch $@

release: install
	$(PY) -m autograder release

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) dist
