# The two commands the README opens with: `make serve` and `make test`.
# Both create .venv on first use: `make serve` installs only what serving
# needs (the project's dependencies), the test targets add the dev extras.
# Each install has its own stamp, so switching between them installs only
# what is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check --quiet
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
# The interpreter `make serve` hands to bin/chartr-entrypoint.
SERVE_PYTHON ?= $(abspath $(BIN))/python

.PHONY: install install-runtime serve test test-fast

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME): pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

# The dev extras include every runtime dependency: this also satisfies $(RUNTIME).
# The first-party Python client (clients/python, package chartr-client) comes with them: its tests
# (tests/clients/python) run against a live server in `make test`.
$(DEV): pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev]' -e clients/python
	touch $(RUNTIME) $@

install: $(DEV)
install-runtime: $(RUNTIME)

# gunicorn on 127.0.0.1:8000 (CHARTR_BIND), SQLite in the data dir; see bin/chartr-entrypoint.
# `exec` all the way down (make's shell, the entrypoint): gunicorn is make's
# own child, so Ctrl-C or a SIGTERM to make stops the server too.
serve: $(RUNTIME)
	export CHARTR_PYTHON=$(SERVE_PYTHON); exec bin/chartr-entrypoint

# The whole suite, real server processes included.
test: $(DEV)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Everything but the tests marked `process` (real servers, the browser, the benchmark smoke run)
# and `slow` (the 1M-row EXPLAIN checks).
test-fast: $(DEV)
	$(BIN)/python -m pytest -m "not process and not slow" $(PYTEST_ARGS)
