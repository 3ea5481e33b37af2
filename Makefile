# The project's verbs. Every target installs what it needs into .venv first.
VENV  ?= .venv
BIN   := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PATH := $(abspath $(BIN)):$(PATH)
# The web client's lint tools, from its lockfile (npm ci when node_modules is missing or older).
WEB       := api/web
WEB_BIN   := $(WEB)/node_modules/.bin
WEB_STAMP := $(WEB)/node_modules/.package-lock.json
WEB_JS    := '$(WEB)/static/js/*.js' '$(WEB)/static/panels/*.js' '$(WEB)/vendor-src/*.js' $(WEB)/eslint.config.mjs

.PHONY: install run worker test lint format bench vendor clean compose-smoke web-types

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

$(WEB_STAMP): $(WEB)/package-lock.json
	cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_STAMP)

run: $(STAMP)  ## the API and a worker on embedded defaults
	$(BIN)/eonyx serve

worker: $(STAMP)
	$(BIN)/eonyx worker

# Two processes (pytest-xdist), a test module per process at a time: each has its own
# PostgreSQL schema and Redis databases (tests/conftest.py). XDIST= runs in one process.
XDIST ?= -n 2 --dist loadfile

test: $(STAMP)  ## the whole suite (real-service cases skip without PostgreSQL/Redis, fail in CI)
	$(BIN)/pytest $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP) $(WEB_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(WEB_BIN)/eslint --max-warnings=0 $(WEB)
	$(WEB_BIN)/prettier --check $(WEB_JS)
	$(WEB_BIN)/tsc -p $(WEB)/jsconfig.json

format: $(STAMP) $(WEB_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(WEB_BIN)/prettier --write $(WEB_JS)

web-types: $(STAMP)  ## the web client's event types (events.d.ts) from the OpenAPI document
	$(BIN)/python -m api.docs.web_types

vendor:  ## re-bundle the web client's libraries from api/web/package-lock.json (needs npm)
	bash api/web/vendor.sh

compose-smoke: $(STAMP)  ## the compose stack built, run and checked for real (docker or podman)
	$(BIN)/python deploy/compose_smoke.py

bench: $(STAMP)
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
