"""CPU time of the embedding model per batch at the thread count the environment sets.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.embed_threads
    OMP_NUM_THREADS=2 .venv/bin/python -m bench.embed_threads

Run both while something else keeps the cores busy (as ``make test`` does: four or more processes on
two cores) to see what the model's own threads cost there; on an idle machine more threads cut the
wall time instead. Prints the thread count, CPU seconds (user + system) and wall seconds.
"""

from __future__ import annotations

import os
import resource
import time

import django


def main(texts: int = 160, rounds: int = 3) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    django.setup()
    from kb.embedder import embedder

    model = embedder()
    batch = [f"Section {i}: the runbook says to restart the service and read the logs for error {i}. " * 3
             for i in range(texts)]
    model.embed(batch[:8])  # load and warm up outside the measurement
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    for _ in range(rounds):
        model.embed(batch)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(f"threads {os.environ.get('OMP_NUM_THREADS', 'default')}: cpu {cpu:.1f} s, "
          f"wall {time.monotonic() - start:.1f} s for {rounds} x {texts} texts")


if __name__ == "__main__":
    main()
