# Jet Memory. The two commands a newcomer needs: `make serve` and `make test`.
# Everything else (venv, packages, GraphiQL assets, Redis for the tests) is set up on demand.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ASSETS := assets/node_modules/.installed

.PHONY: assets serve test lint typecheck schema migrate bench clean help

help:
	@echo "make serve  - install, migrate, create a dev tenant, run the API and a worker (embedded Redis)"
	@echo "make test   - install and run the whole test suite"
	@echo "make lint   - ruff and mypy --strict"
	@echo "make schema - regenerate schema.graphql from the code"
	@echo "make bench  - run the benchmarks in bench/"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python >= 3.11 is required (set PYTHON=python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $@

# GraphiQL's JS/CSS from the npm registry (pinned in assets/package-lock.json); never committed.
# Without npm the API still runs; GET /graphql then explains what is missing.
$(ASSETS): assets/package.json assets/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix assets --no-audit --no-fund --loglevel=error && touch $@; \
	else \
		echo "npm not found: GraphiQL's assets are not installed (the API works without them)"; \
	fi

assets: $(ASSETS)

serve: $(STAMP) $(ASSETS)
	$(BIN)/jet-memory migrate
	$(BIN)/jet-memory dev
	$(BIN)/jet-memory up

test: $(STAMP) $(ASSETS)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check app tests bench migrations examples
	$(BIN)/ruff format --check app tests bench migrations examples
	$(BIN)/mypy app
	$(BIN)/mypy bench examples

schema: $(STAMP)
	$(BIN)/jet-memory export-schema -o schema.graphql

migrate: $(STAMP)
	$(BIN)/jet-memory migrate

bench: $(STAMP)
	@echo "see bench/README.md"

clean:
	rm -rf $(VENV) assets/node_modules .pytest_cache .mypy_cache .ruff_cache
