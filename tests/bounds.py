"""How long a test waits for something that must happen -- a job, a sync, a worker's task, a process, a thread -- before
it fails. The one place these waits are sized (from them: the browser tests' Playwright defaults,
tests/browser/conftest.py; the load harness's own waits, bench/load_harness.py, are sized alike).

Bounds, not timings: a passing test goes on the moment the thing has happened, so a high bound costs nothing when the
code is right; it is only how long a broken run takes to say so. Sized for the slowest machine the suite runs on: CI's
2-core machine ran the same Python about 3.5 times slower than a fast one, with the unit tier's processes beside the db
tier's three (a test gets a third of a core, at times less). A bound here holds at 4 times slower than a fast machine
with 3 or 4 other processes on each core: fifteen times or more what the wait takes on a quiet fast machine. (On that
machine the soak ran out of its 120 s settle time, and a re-screen wait out of its 60 s.)

A test that shows that something does *not* happen within a window waits its window in full: no such window is taken
from here.
"""

# A job, a sync or a task to finish in a worker (the first one a worker runs loads the embedding model), or a
# subprocess that does real work (loads the model, migrates a database, starts servers).
JOB_WAIT = 600
# A process to start and answer (a worker's ping, a server's first answer, a short subprocess), a thread or another
# database session of the test's own to reach a point (a lock wait) or end, a message to arrive.
START_WAIT = 300
