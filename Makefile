# Two commands do all the set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install book book-learner test grade clean mathjax gradescope release

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

# The book first: tests/test_browser.py opens every page of the current build in Chromium.
test: $(STAMP) book
	$(PY) -m pytest

grade: $(STAMP)
	$(VENV)/bin/mha-grade mha_exercises

# Instructors: the Gradescope autograder zip (hidden seed drawn at build time) and the learner
# release (book, stubs, self-check on public cases; no solutions). Both land in dist/.
gradescope: $(STAMP)
	$(PY) scripts/build_gradescope.py --out dist/gradescope_autograder.zip

release: book-learner
	OMP_NUM_THREADS=1 $(PY) scripts/build_release.py --out dist/release --html $(LEARNER_BOOK)/_build/html

# The book as learners may see it before the deadline, every {solution} hidden (sphinx-exercise's
# hide_solutions): $(LEARNER_BOOK)/_build/html. It reuses the notebook runs of `make book`.
LEARNER_BOOK := _build/learner
book-learner: $(STAMP)
	$(PY) scripts/build_release.py --book-config $(LEARNER_BOOK)/_config.yml
	MHA_BACKEND=solutions OMP_NUM_THREADS=1 $(VENV)/bin/jupyter-book build . --config $(LEARNER_BOOK)/_config.yml \
		--path-output $(LEARNER_BOOK) -W -n --keep-going

clean:
	rm -rf _build

# MathJax is vendored in book/_static/mathjax (with its LICENSE) so that the site reads offline.
# This refreshes it from npm: the TeX-to-HTML bundle, the TeX extensions it loads on demand, its
# fonts, and the menu and accessibility components.
MATHJAX_VERSION := 3.2.2
MATHJAX_DIR := book/_static/mathjax
mathjax:
	rm -rf _build/mathjax-npm $(MATHJAX_DIR) && mkdir -p _build/mathjax-npm $(MATHJAX_DIR)/input/tex $(MATHJAX_DIR)/output/chtml/fonts
	cd _build/mathjax-npm && npm install --silent --no-audit --no-fund mathjax@$(MATHJAX_VERSION)
	src=_build/mathjax-npm/node_modules/mathjax; \
	cp $$src/LICENSE $$src/es5/tex-chtml.js $(MATHJAX_DIR)/ && \
	cp -r $$src/es5/a11y $$src/es5/ui $(MATHJAX_DIR)/ && \
	cp -r $$src/es5/input/tex/extensions $(MATHJAX_DIR)/input/tex/ && \
	cp -r $$src/es5/output/chtml/fonts/woff-v2 $(MATHJAX_DIR)/output/chtml/fonts/
