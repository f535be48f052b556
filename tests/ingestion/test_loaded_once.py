"""What a process loads once and shares is loaded once, whichever threads ask for it first at the same time: the
tokenizer (``ingestion.chunking.tokens.default_counter``) and the screening detector's weights
(``ingestion.screening.detector.load_model``), as the embedding model already was (``tests/test_heap_freeze.py``).

``lru_cache`` calls the function again for every thread that misses before the first call returns, and hands each
such thread what its own call loaded: a web process's threads whose first searches or previews came together each
loaded a tokenizer (and the detector's weights), kept by whoever held them. Each check runs in a fresh interpreter,
where nothing is loaded yet.

A process forked while another thread held one of these locks (a load under way) had it held for ever: the forked
child's first call waited on it without end. Each lock is made afresh in a forked child (``os.register_at_fork``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.bounds import JOB_WAIT, START_WAIT

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("module, loader", [
    ("ingestion.chunking.tokens", "default_counter"),
    ("ingestion.screening.detector", "load_model"),
])
def test_threads_that_ask_together_load_it_once(module, loader):
    # Eight threads start together; every one gets the same object, the one later calls get: one load. (A thread
    # whose own call loaded gets what it loaded, so two loads are two distinct objects among the threads'.)
    code = (
        "import sys, threading\n"
        f"from {module} import {loader} as load\n"
        "sys.setswitchinterval(1e-6)  # switch threads as often as CPython will: the most interleavings\n"
        "together, got = threading.Barrier(8), []\n"
        "def ask():\n"
        "    together.wait()\n"
        "    got.append(load())\n"
        "threads = [threading.Thread(target=ask) for _ in range(8)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print('LOADED', len({id(x) for x in got}), all(x is load() for x in got))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=START_WAIT)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(line for line in run.stdout.splitlines() if line.startswith("LOADED"))
    assert line == "LOADED 1 True", line  # distinct objects the threads got; each the one later calls get


@pytest.mark.parametrize("module, loader", [
    ("ingestion.chunking.tokens", "default_counter"),
    ("ingestion.screening.detector", "load_model"),
    ("ingestion.embedding", "get_embedder"),
])
def test_a_process_forked_while_another_thread_loads_loads_too(module, loader):
    # A process forked while another thread holds the load lock (a Celery pool child, the parse server, a
    # multiprocessing worker forked while a web thread loads) had it held for ever: that thread is not in the
    # child, and the child's first call waited on its lock without end. Here a thread holds the lock (deterministically:
    # it holds it until told) while the process forks; the child must load. A child still loading after the bound is
    # killed and the check fails.
    code = (
        "import os, select, signal, threading, traceback\n"
        f"import {module} as module\n"
        "held, release = threading.Event(), threading.Event()\n"
        "def hold():\n"
        "    with module._LOADING:\n"
        "        held.set()\n"
        "        release.wait()\n"
        "holder = threading.Thread(target=hold)\n"
        "holder.start()\n"
        "held.wait()\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.close(r)\n"
        "    try:\n"
        f"        module.{loader}()\n"
        "        os.write(w, b'LOADED')\n"
        "        os._exit(0)\n"
        "    except BaseException:\n"
        "        traceback.print_exc()\n"
        "        os._exit(1)\n"
        "os.close(w)\n"
        f"said = os.read(r, 16) if select.select([r], [], [], {START_WAIT})[0] else b'STILL LOADING'\n"
        "if said == b'STILL LOADING':\n"
        "    os.kill(pid, signal.SIGKILL)\n"
        "os.waitpid(pid, 0)\n"
        "release.set()\n"
        "holder.join()\n"
        "print('CHILD', said.decode() or 'FAILED')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=JOB_WAIT)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(line for line in run.stdout.splitlines() if line.startswith("CHILD"))
    assert line == "CHILD LOADED", (line, run.stderr[-3000:])
