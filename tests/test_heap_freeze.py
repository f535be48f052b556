"""What lives as long as a process is frozen out of the garbage collector's sight (``gc.freeze``):
the web application once its views are loaded (``bulkhead/wsgi.py``) and the embedding model once
loaded (``ingestion.embedding.get_embedder``). Without it a full collection walked them every few
requests, and a web worker that had served a search answered one page in five ~300 ms late
(docs/benchmarks.md, "Console pages"). Each check runs in a fresh interpreter: the test process's
own heap says nothing about a server's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bounds import JOB_WAIT

ROOT = Path(__file__).resolve().parent.parent


def _frozen_after(code: str) -> tuple[int, int]:
    script = f"import gc\nbefore = gc.get_freeze_count()\n{code}\nprint(before, gc.get_freeze_count())"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bulkhead.settings"}
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=JOB_WAIT)
    assert run.returncode == 0, run.stderr[-3000:]
    before, after = map(int, run.stdout.split()[-2:])
    return before, after


def test_loading_the_embedding_model_freezes_what_it_loaded():
    before, after = _frozen_after("from ingestion.embedding import get_embedder\nget_embedder()")
    assert before == 0 and after > 50_000, (before, after)


@pytest.mark.db
def test_the_web_application_freezes_its_loaded_views(embedded_servers):
    before, after = _frozen_after(
        "import bulkhead.wsgi\nimport sys\nassert 'console.views.document_page' in sys.modules")
    assert before == 0 and after > 50_000, (before, after)


def test_threads_that_ask_for_the_model_together_load_it_once():
    # Found hunting process and thread lifetimes: a fresh web process's threads whose first searches came together
    # each loaded a model (lru_cache calls the function once per thread that misses), and the copies that lost the
    # race stayed in memory for the process's life -- frozen by the load, their reference cycles out of the
    # collector's sight. Four threads start together; one model, one load.
    code = (
        "import gc, threading, weakref\n"
        "from ingestion.embedding import get_embedder\n"
        "together, got = threading.Barrier(4), []\n"
        "def ask():\n"
        "    together.wait()\n"
        "    got.append(get_embedder())\n"
        "threads = [threading.Thread(target=ask) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "models = [weakref.ref(e.model) for e in got]\n"
        "kept = get_embedder().model\n"
        "got.clear()\n"
        "gc.collect()\n"
        "print('MODELS', len({id(m()) for m in models}), sum(m() is not None and m() is not kept for m in models))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bulkhead.settings"}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=JOB_WAIT)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(line for line in run.stdout.splitlines() if line.startswith("MODELS"))
    assert line == "MODELS 1 0", line  # distinct models the threads got; others still alive besides the kept one
