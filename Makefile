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
# "New plan from a goal" without a model or a key: `make run` asks the demo's planner
# script unless FORGE_PLANNER is set (a real model: FORGE_PLANNER=openai:MODEL make run).
DEMO_PLANNER := scripted:$(CURDIR)/examples/demo/planner.yaml

.PHONY: help run test lint bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# One line per step: a step's own output is shown only when it fails.
QUIETLY = quietly() { out=$$("$$@" 2>&1) || { status=$$?; printf '%s\n' "$$out" >&2; return $$status; }; }; quietly

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "Forge needs Python 3.12 or newer; set PYTHON=/path/to/python3.12")'
	@echo "--- installing Python packages into $(VENV) (first run, or pyproject.toml changed: a minute or two)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(QUIETLY) $(BIN)/python -m pip install --quiet --upgrade pip
	@$(QUIETLY) $(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

run: export FORGE_PLANNER ?= $(DEMO_PLANNER)
run: $(STAMP) ## Set up, migrate, load the demo, start web server and worker (PORT=, HOST=)
	@./.ci/system-packages run
	@echo "--- migrating the database"
	@$(QUIETLY) $(BIN)/python manage.py migrate --no-input
	@echo "--- loading the demo"
	@$(BIN)/python manage.py forge_demo
	@echo "--- starting the web server and a worker"
	@$(BIN)/python manage.py forge_serve --host $(HOST) --port $(PORT)

# Test processes (pytest-xdist), a test file each at a time: make test TEST_JOBS=4. One
# more than the CPUs: browser and deployment tests spend much of their time waiting
# (the SQLite pass took 8:56 with 3 processes on 2 CPUs, 9:50 with 2).
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST := $(BIN)/python -m pytest -rs -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

test: $(STAMP) ## Set up from nothing and run every test (on SQLite, and beside it the database-specific web tests on PostgreSQL)
	@./.ci/system-packages test
	@./tests/run-passes.sh $(PYTEST)

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
	$(BIN)/python -m bench.tracing
	$(BIN)/python -m bench.scale_out
	$(BIN)/python -m bench.crowd
	$(BIN)/python -m bench.editor
	$(BIN)/python -m bench.pages
	$(BIN)/python -m bench.load

clean: ## Remove the virtualenv and local state
	rm -rf $(VENV) db.sqlite3* .pytest_cache .mypy_cache .ruff_cache
