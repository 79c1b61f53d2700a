# Forge. `make help` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= $(shell command -v python3.12 2>/dev/null || command -v python3 2>/dev/null)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Where `make run` serves: make run PORT=8123 HOST=0.0.0.0
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: help run test lint bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "Forge needs Python 3.12 or newer; set PYTHON=/path/to/python3.12")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $@

run: $(STAMP) ## Set up, migrate, load the demo, start web server and worker (PORT=, HOST=)
	@./.ci/system-packages run
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py forge_demo
	$(BIN)/python manage.py forge_serve --host $(HOST) --port $(PORT)

test: $(STAMP) ## Set up from nothing and run every test (SQLite, then the web tests but slow ones on PostgreSQL)
	@./.ci/system-packages test
	env -u DATABASE_URL $(BIN)/python -m pytest -rs
	@pg="$${FORGE_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"; \
	again="tests/web"; \
	if $(BIN)/python -c 'import sys, psycopg; psycopg.connect(sys.argv[1], connect_timeout=3).close()' "$$pg" 2>/dev/null; then \
		echo "--- again on PostgreSQL ($$pg): $$again"; \
		DATABASE_URL="$$pg" $(BIN)/python -m pytest -rs -m "not slow" $$again; \
	elif [ "$$FORGE_REQUIRE_SERVICES" = 1 ]; then \
		echo "PostgreSQL does not answer at $$pg, and FORGE_REQUIRE_SERVICES=1" >&2; exit 1; \
	else \
		echo "--- SKIPPED the PostgreSQL pass: nothing answers at $$pg (start PostgreSQL or set FORGE_TEST_DATABASE_URL; FORGE_REQUIRE_SERVICES=1 makes this an error)"; \
	fi

lint: $(STAMP) ## ruff, mypy on the core, the import contracts
	$(BIN)/ruff check .
	$(BIN)/ruff format --check forge tests
	$(BIN)/mypy forge
	$(BIN)/lint-imports

bench: $(STAMP) ## Run every benchmark (each against a baseline measured in the same run)
	$(BIN)/python -m bench.compile
	$(BIN)/python -m bench.startup
	$(BIN)/python -m bench.import_limits
	$(BIN)/python -m bench.body_limit
	$(BIN)/python -m bench.overhead
	$(BIN)/python -m bench.api_compile
	$(BIN)/python -m bench.stream
	$(BIN)/python -m bench.worker_path
	$(BIN)/python -m bench.scale_out
	$(BIN)/python -m bench.crowd
	$(BIN)/python -m bench.editor
	$(BIN)/python -m bench.pages

clean: ## Remove the virtualenv and local state
	rm -rf $(VENV) db.sqlite3* .pytest_cache .mypy_cache .ruff_cache
