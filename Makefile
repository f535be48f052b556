# Bulkhead: `make demo` runs it, `make test` tests it. Both set everything up themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test test-unit browser worker web stop services lint bench-chunks clean-data

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet ".[dev]"
	$(PY) -m pip install --quiet -e "clients/python[langchain,llama-index]"  # the Python client, tested live
	@touch $(STAMP)

# With DATABASE_URL / REDIS_URL unset, each entry point starts (or reuses) the embedded
# PostgreSQL and Redis in .data/ (or BULKHEAD_DATA_DIR) that it needs: manage.py (all but
# kb_chunk, kb_chunkeval, help, check, collectstatic), the web server (bulkhead/wsgi.py), the
# workers (bulkhead/celery.py). This target starts them alone; `make stop` stops them.
services: $(STAMP)
	@$(PY) -m bulkhead.embedded_services start

# Serves on BULKHEAD_HOST:BULKHEAD_PORT (127.0.0.1:8000). Refuses, starting nothing, when a demo
# already runs on this data folder or the port is taken. Ctrl-C, SIGTERM, or any of its processes
# exiting stops all of them (bulkhead/launch.py); the embedded servers stay up for reuse.
demo: $(STAMP)
	@$(PY) manage.py kb_demo

# The console's browser tests drive Debian's chromium through Playwright (no browser download), or the
# browser BULKHEAD_CHROMIUM names.
CHROMIUM ?= $(or $(BULKHEAD_CHROMIUM),/usr/bin/chromium)
browser:
	@test -x $(CHROMIUM) || { echo "installing chromium (apt) for the browser tests"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# The layering check, then every test in two tiers at once: the unit tier (no database, one
# process; its report is printed when both are done, from .data/test/unit-tier.log) beside the "db"
# tier against .data/test (its own embedded PostgreSQL and Redis, stopped afterwards, so a running
# `make demo` is left alone), in three pytest-xdist processes (a file to one process, the longest
# files first: tests/conftest.py LONGEST_FIRST; each has its own test database, Celery worker and Redis
# databases). The db tier waits on workers, servers and the browser for much of its time: the unit tier
# and the other processes use that. OMP_NUM_THREADS=1: four or more processes share two cores, and the
# embedding model's own threads only spin against each other there (a third less CPU per embedding,
# docs/benchmarks.md "The suite"). BULKHEAD_PG_NON_DURABLE=1: the test folder's PostgreSQL commits without
# waiting for the disk (fsync, synchronous_commit and full_page_writes off; bulkhead/embedded_services.py):
# its data is thrown away anyway; the demo's server keeps the defaults. PYTHONDONTWRITEBYTECODE= (empty: unset):
# where the environment says not to write bytecode (this project's Dockerfile does, and so did the machine the
# twenty-fifth session measured on), every process compiled the checkout's modules again and pytest rewrote the
# asserts of every test module and plugin again -- 7 of the 12 CPU-seconds each of the four pytest processes spends
# collecting -- and every worker and server the tests start compiled what it imports; here the first process to
# import a module caches it (__pycache__, git-ignored) for the others (docs/benchmarks.md, "The suite, twenty-fifth
# session").
# Either tier failing fails the target. The last lines printed are what failed in each
# tier and each tier's result line, so that the tail of a CI log says what went wrong.
test: $(STAMP) browser
	$(PY) scripts/check_architecture.py
	$(VENV)/bin/ruff check .
	@mkdir -p .data/test && : > .data/test/db-tier.log
	@BULKHEAD_DATA_DIR=.data/test OMP_NUM_THREADS=1 BULKHEAD_PG_NON_DURABLE=1 PYTHONDONTWRITEBYTECODE= bash -c 'trap "$(PY) -m bulkhead.embedded_services stop >/dev/null 2>&1" EXIT; \
		$(PY) -m pytest -m "not db" $(PYTEST_ARGS) > .data/test/unit-tier.log 2>&1 & unit_pid=$$!; \
		db=0; $(PY) -m bulkhead.embedded_services start >/dev/null || db=$$?; \
		if [ $$db = 0 ]; then $(PY) -m pytest -m db -n 3 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS) 2>&1 | tee .data/test/db-tier.log; db=$${PIPESTATUS[0]}; fi; \
		unit=0; wait $$unit_pid || unit=$$?; \
		echo "=== the unit tier (-m \"not db\"), run beside the db tier ==="; cat .data/test/unit-tier.log; \
		echo "=== summary: what failed, then each tier'"'"'s result ==="; \
		for tier in db unit; do grep -E "^(FAILED|ERROR) " .data/test/$$tier-tier.log | sed "s/^/[$$tier] /" | head -20; done; \
		result() { grep -E "^=+ .*(passed|failed|error).* in " .data/test/$$1-tier.log | tail -1; }; \
		echo "[db] exit $$db: $$(result db)"; echo "[unit] exit $$unit: $$(result unit)"; \
		[ $$db = 0 ] && [ $$unit = 0 ]'

# The tests that need no database, Redis or worker (parsers, chunking, the access rule, URL
# forms): tests/conftest.py marks every test that uses the database "db". Starts no server.
# Two processes, one per core (pytest-xdist).
test-unit: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -m "not db" -n 2 $(PYTEST_ARGS)

# Two workers (see enqueue_jobs in kb/jobs.py): "fast" serves the interactive lane alone,
# so a large document or a batch import on the bulk lane never holds up a small upload; "bulk"
# serves both lanes. Refused while a demo or another `make worker` runs on this data folder, or while
# its database has unapplied migrations (`manage.py migrate` sets it up); Ctrl-C,
# or either worker exiting, stops both (bulkhead/launch.py).
worker: $(STAMP)
	@$(PY) -m bulkhead.launch worker

# gunicorn on BULKHEAD_HOST:BULKHEAD_PORT (127.0.0.1:8000), 2 workers x 4 threads: at most 8
# database connections, whatever the load. Refused while the port is taken, a demo or another
# `make web` runs on this data folder, or its database has unapplied migrations.
web: $(STAMP)
	@$(PY) -m bulkhead.launch web

# Stops a demo, `make web` or `make worker` running on this data folder, then PostgreSQL and Redis.
stop:
	@test -x $(PY) && $(PY) -m bulkhead.launch stop || true

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean-data: stop
	rm -rf .data

# The soak-and-chaos harness (bench/load_harness.py, results in docs/reliability.md): gunicorn,
# Celery workers and beat on the embedded servers of .data/load, a mixed load of readers, editors
# and admins, each fault in turn, every answer checked for leaks; then scale-out. Takes about an
# hour on 2 cores; SOAK_ARGS changes it (e.g. SOAK_ARGS="--seconds 60 --scenarios steady,poison").
SOAK_ARGS ?= --seconds 120 --scale
.PHONY: soak
soak: $(STAMP)
	BULKHEAD_DATA_DIR=.data/load $(PY) manage.py kb_bench load $(SOAK_ARGS) --json out/soak.json
