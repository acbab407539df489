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

serve: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py runserver 127.0.0.1:8000

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)
