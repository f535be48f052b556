# Bulkhead: `make demo` runs it, `make test` tests it. Both set everything up themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test worker web stop services lint bench-chunks clean-data

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet ".[dev]"
	@touch $(STAMP)

services: $(STAMP)
	@$(PY) -m kb.embedded_services start

demo: $(STAMP)
	@$(PY) manage.py kb_demo

# Runs against .data/test (its own embedded PostgreSQL and Redis, stopped afterwards),
# so a running `make demo` is left alone.
test: $(STAMP)
	@BULKHEAD_DATA_DIR=.data/test bash -c 'trap "$(PY) -m kb.embedded_services stop >/dev/null 2>&1" EXIT; \
		$(PY) -m kb.embedded_services start >/dev/null && $(PY) -m pytest $(PYTEST_ARGS)'

# Two workers (see enqueue_jobs in ingestion/tasks.py): "fast" serves the interactive lane alone,
# so a large document or a batch import on the bulk lane never holds up a small upload; "bulk"
# serves both lanes.  Ctrl-C stops both.
worker: $(STAMP)
	@bash -c 'trap "kill \$$(jobs -p) 2>/dev/null; wait" EXIT; \
		$(PY) -m celery -A kb worker -Q celery -n fast@%h --beat --loglevel=INFO --concurrency=1 & \
		$(PY) -m celery -A kb worker -n bulk@%h --loglevel=INFO --concurrency=1 & \
		wait -n'

# gunicorn, 2 workers x 4 threads: at most 8 database connections, whatever the load.
web: $(STAMP)
	$(PY) -m gunicorn kb.wsgi:application --bind 127.0.0.1:8000 --worker-class gthread --workers 2 --threads 4 \
		--timeout 120

stop:
	@test -x $(PY) && $(PY) -m kb.embedded_services stop || true

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean-data: stop
	rm -rf .data
