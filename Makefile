# Two commands do all the set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install book test grade clean

install: $(STAMP)

# torch first, alone: `torch==2.13.0` takes the machine's local CPU wheel; asked for by another
# package first, pip could pick a CUDA build from the registry.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# Every chapter executed against the reference solutions; any execution error or Sphinx
# warning fails the build.
book: $(STAMP)
	MHA_BACKEND=solutions OMP_NUM_THREADS=1 $(VENV)/bin/jupyter-book build . -W -n --keep-going

test: $(STAMP)
	$(PY) -m pytest

grade: $(STAMP)
	$(VENV)/bin/mha-grade mha_exercises

clean:
	rm -rf _build
