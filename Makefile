# Two entry points matter (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BASE_STAMP := $(VENV)/.installed-base
# Every install (here, CI through `make test`, the container images) takes its versions from the lock; pyproject.toml
# keeps the ranges. `make lock` remakes it from the newest versions those ranges allow.
LOCK := constraints.txt
LOCK_EXTRAS := dev,spark,cdk

.PHONY: help install demo lint check test test-unit bench docs lock

help:
	@echo "make demo   - set up a virtualenv and run the demo on a local instance"
	@echo "make test   - set up a virtualenv, lint (ruff, mypy, import rules) beside every test"
	@echo "make check  - the edit loop: lint beside the unit, contract and stack tests on every core"
	@echo "make test-unit - the fastest lane: ruff and the unit tests only (no moto, Spark or CDK synthesis)"
	@echo "make docs   - regenerate docs/usage/properties, then build the site and API reference into site/ (strict)"
	@echo "make lock   - refresh $(LOCK) (the exact versions every install uses) from the ranges in pyproject.toml"

# pip installs uv (both from the lock), and uv installs the package with the lock's versions: the same packages pip
# would install, in about a third of the time, their bytecode compiled on every core.
UV_INSTALL = $(VENV)/bin/uv pip install --python $(PY) -q --compile-bytecode -c $(LOCK)

$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c $(LOCK) --upgrade pip uv
	$(UV_INSTALL) -e '.[$(LOCK_EXTRAS)]'
	touch $(STAMP)

$(BASE_STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c $(LOCK) --upgrade pip uv
	$(UV_INSTALL) -e .
	touch $(BASE_STAMP)

install: $(STAMP)

demo: $(BASE_STAMP)
	$(VENV)/bin/sleeper demo

lint: $(STAMP)
	$(VENV)/bin/ruff check sleeper tests benchmarks app.py
	$(VENV)/bin/ruff format --check sleeper tests benchmarks app.py
	$(VENV)/bin/mypy

# Tests run on every core (pytest-xdist), a test file per worker at a time: module fixtures stay in one process; files
# sharing a costly setup (tests/stacks' CDK runtime, the Spark files' JVM) run as one unit on one worker. Units start in
# the order tests/schedule.py gives, the slowest first (--no-loadscope-reorder keeps it: xdist would start the files
# with the most tests first and leave a slow file of few tests to run alone at the end).
# Two workers per core: a worker often waits (on the processes a test starts, a moto server, Spark's JVM, a poll), and
# on this 2-core machine 4 workers took the full run from 19 min 38 s to 13 min 41 s (6 workers: 13 min 30 s).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 * (os.cpu_count() or 1))')
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Every test process (pytest's workers, and the CLI, emulated tasks and engine workers they start) imports the
# package: its bytecode is compiled once first, since an editable install is not compiled by pip and an environment
# may set PYTHONDONTWRITEBYTECODE, which would have every new process compile the sources again (compileall only
# compiles what changed).
BYTECODE = $(PY) -m compileall -q sleeper tests

# pytest rewrites each test module's asserts on import and caches the result beside its bytecode, except when
# PYTHONDONTWRITEBYTECODE is set: then every worker of every run rewrites every module again (about 10 s of CPU each).
PYTEST = PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

# The lint runs beside the tests (mypy from cold takes a core for a minute or two, which the workers leave idle at
# their start and end); both always finish, and the target fails if either failed.
define LINT_BESIDE
	$(BYTECODE); \
	$(MAKE) --no-print-directory lint > $(VENV)/lint.log 2>&1 & lint=$$!; \
	$(PYTEST) -q $(PYTEST_PARALLEL) $(1); tests=$$?; \
	wait $$lint; linted=$$?; cat $(VENV)/lint.log; \
	if [ $$linted -ne 0 ]; then echo "lint failed (above)"; fi; \
	exit $$(( tests != 0 || linted != 0 ))
endef

# The edit loop leaves the exhaustive synthesis matrix (168 configurations, about 2.5 minutes of the check's 3.5 on
# 2 cores) and the packaged app (a wheel built and installed into a fresh venv, about 75 s of the one worker that
# runs tests/stacks) to `make test`; the example app's synthesis, its IaC checks and every other stack test stay in it.
CHECK_DEFERRED = tests/stacks/test_synthesis_matrix.py tests/stacks/test_synthesis_matrix_b.py tests/stacks/test_packaged_app.py

check: $(STAMP)
	$(call LINT_BESIDE,tests/unit tests/contract tests/stacks $(addprefix --ignore=,$(CHECK_DEFERRED)))

test: $(STAMP)
	$(call LINT_BESIDE,)

test-unit: $(STAMP)
	$(VENV)/bin/ruff check sleeper tests benchmarks app.py
	$(BYTECODE)
	$(PYTEST) -q tests/unit -m "not slow and not integration and not aws"

# The properties pages are generated first, then the site (docs/ and the API reference from the docstrings) is built
# into site/ with every warning an error, as tests/integration/test_docs_build.py builds it in CI.
docs: $(STAMP)
	$(PY) -m sleeper.core.properties.docs docs/usage/properties
	$(VENV)/bin/mkdocs build --strict --site-dir site

# A fresh virtualenv (in a temporary directory) gets the newest versions pyproject.toml's ranges allow, with no lock,
# and its exact versions become the lock (the package itself, setuptools and wheel left out). Run it with the Python
# that CI and the images use (3.11).
lock:
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install -q --upgrade pip uv; \
	"$$tmp/venv/bin/python" -m pip install -q -e '.[$(LOCK_EXTRAS)]'; \
	{ \
	  echo "# The exact version of every package the Makefile installs (.[$(LOCK_EXTRAS)], pip and uv), made by \`make lock\`"; \
	  echo "# with Python $$("$$tmp/venv/bin/python" -c 'import platform; print(platform.python_version())') on $$(uname -s) $$(uname -m). Installs take it as a constraints file (pip install -c"; \
	  echo "# $(LOCK)); pyproject.toml keeps the ranges. Do not edit by hand: change a range, then run \`make lock\`."; \
	  "$$tmp/venv/bin/python" -m pip freeze --all --exclude-editable | grep -v -E '^(setuptools|wheel)=='; \
	} > "$$tmp/$(LOCK)"; \
	mv "$$tmp/$(LOCK)" $(LOCK)
