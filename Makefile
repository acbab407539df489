# The two commands the README opens with: `make serve` and `make test`.
# Both create .venv and install the project from pyproject.toml on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: install serve test

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

# gunicorn on 127.0.0.1:8000 (CHARTR_BIND), SQLite in the data dir; see bin/chartr-entrypoint.
serve: install
	CHARTR_PYTHON=$(abspath $(BIN))/python bin/chartr-entrypoint

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)
