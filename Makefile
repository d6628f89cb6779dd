# Two entry points matter (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BASE_STAMP := $(VENV)/.installed-base

.PHONY: help install demo lint test test-unit bench docs

help:
	@echo "make demo   - set up a virtualenv and run the demo on a local instance"
	@echo "make test   - set up a virtualenv, lint (ruff, mypy, import rules) and run every test"
	@echo "make test-unit - the fast lane: ruff and the unit tests only (no moto, Spark or CDK synthesis)"
	@echo "make docs   - regenerate docs/usage/properties from the property definitions"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,spark,cdk]'
	touch $(STAMP)

$(BASE_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(BASE_STAMP)

install: $(STAMP)

demo: $(BASE_STAMP)
	$(VENV)/bin/sleeper demo

lint: $(STAMP)
	$(VENV)/bin/ruff check sleeper lambdas tests benchmarks stacks app.py
	$(VENV)/bin/ruff format --check sleeper lambdas tests benchmarks stacks app.py
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -q

test-unit: $(STAMP)
	$(VENV)/bin/ruff check sleeper lambdas tests benchmarks stacks app.py
	$(PY) -m pytest -q tests/unit -m "not slow and not integration and not aws"

docs: $(STAMP)
	$(PY) -m sleeper.core.properties.docs docs/usage/properties
