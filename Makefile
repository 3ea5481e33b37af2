# The project's verbs. Every target installs what it needs into .venv first.
VENV  ?= .venv
BIN   := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install run worker test lint format bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)  ## the API and a worker on embedded defaults
	$(BIN)/eonyx serve

worker: $(STAMP)
	$(BIN)/eonyx worker

# Two processes (pytest-xdist), a test module per process at a time: each has its own
# PostgreSQL schema and Redis databases (tests/conftest.py). XDIST= runs in one process.
XDIST ?= -n 2 --dist loadfile

test: $(STAMP)  ## the whole suite (real-service cases skip without PostgreSQL/Redis, fail in CI)
	$(BIN)/pytest $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
