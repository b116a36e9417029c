# Two commands do all the set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# A .venv that is a symbolic link (to another checkout's) is refused, whatever the target:
# installing through it would repoint that checkout's editable install at this one, and
# using it would run that checkout's code.
ifneq ($(shell test -L $(VENV) && echo link),)
$(error $(VENV) is a symbolic link to $(shell readlink -f $(VENV)): this checkout needs its own environment. \
Remove the link (rm $(VENV)) and run make install)
endif

.PHONY: install book book-learner test grade clean mathjax gradescope release site site-copy axe

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

# The book first: tests/test_browser.py opens every page of the current build in Chromium and
# runs axe-core's accessibility rules on it.
test: $(STAMP) book axe
	$(PY) -m pytest

# axe-core, exactly as package-lock.json pins it, into node_modules/ (no CDN: the browser tests
# inject it from there). Without npm the accessibility test skips and says why.
AXE := node_modules/axe-core/axe.min.js
axe: $(AXE)
$(AXE): package.json package-lock.json
	@if command -v npm >/dev/null; then npm ci --no-audit --no-fund --silent && touch $(AXE); \
	else echo "WARNING: npm not found: the accessibility test will skip (apt-get install npm)" >&2; fi

# The book as a folder for any static host (GitHub Pages, a university web space, a USB stick):
# every link in it is relative, nothing loads from outside (tests/test_site.py).
SITE_DIR ?= dist/site
site: book
	$(MAKE) --no-print-directory site-copy SITE_DIR=$(SITE_DIR)

# The copy alone, of the current build.
site-copy:
	test -f _build/html/index.html || { echo "no book in _build/html: run make book" >&2; exit 1; }
	rm -rf $(SITE_DIR) && mkdir -p $(SITE_DIR)
	cp -r _build/html/. $(SITE_DIR)/
	rm -rf $(SITE_DIR)/.buildinfo $(SITE_DIR)/.doctrees $(SITE_DIR)/reports
	rm -f $(SITE_DIR)/_static/*webpack-macros.html  # the themes' Jinja macros: templates, not pages
	touch $(SITE_DIR)/.nojekyll  # GitHub Pages: serve _static/ and _sources/ as they are
	@echo "$(SITE_DIR): $$(find $(SITE_DIR) -name '*.html' | wc -l) pages, $$(du -sh $(SITE_DIR) | cut -f1)"

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
