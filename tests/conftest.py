"""Test fixtures: a real PostgreSQL with pgvector (embedded unless DATABASE_URL is set),
a real Redis, and a real Celery worker process on it -- never ``task_always_eager``.

Two tiers. A test that uses the database (the ``django_db`` marker, or any fixture that
needs pytest-django's ``django_db_setup``: ``db``, ``transactional_db``, ``celery_worker``,
...) is marked ``db`` at collection; ``pytest -m "not db"`` (``make test-unit``) runs the
rest, and starts no server. The embedded servers start with the first test that needs
the database (``django_db_setup`` below)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from bulkhead import embedded_services
from bulkhead.embedded_services import database_env
from tests.bounds import START_WAIT
from tests.mail_server import smtp_inbox  # noqa: F401 -- a fixture: a real SMTP server (issue 28)
from tests.parallel import xdist_suffix, xdist_worker_number
from tests.row_order import stored_order_reads  # noqa: F401 -- a fixture: tables read in their stored order

# No timed tests: Hypothesis's default deadline (200 ms an example) failed a property test when the suite shared
# two cores with other work (one example took 285 ms, its rerun 0.07 ms: "Unreliable test timings"). Speed is
# measured by the benchmark scripts; a test that says ``@settings(deadline=...)`` itself still sets its own.
hypothesis_settings.register_profile("bulkhead", deadline=None)
hypothesis_settings.load_profile("bulkhead")

ROOT = Path(__file__).resolve().parent.parent


def _owner_login_for_test_bodies() -> None:
    """The tests' own connection logs in as the owner; requests and workers as the application role.

    A test builds its rows and checks the outcome across tenants (factories, assertions): that is
    the owner path, past the tenant wall. Everything the test exercises runs as the application
    role, under the wall, as in production: each request through the test client or a live server
    switches this connection to the role for its duration (``SET ROLE``, ``tests/application_role.py``), and every worker,
    server or child process logs in as the role (``embedded_services.database_env``). One
    connection keeps a test's rows and its requests in one transaction (a ``TestCase`` rolls both
    back), so the owner path of the code under test (``accounts.tenancy.owner_alias``) is this same
    connection: the ``owner`` alias is folded into ``default``. ``tests/test_tenant_wall.py``
    checks the wall itself over the real application login."""
    from accounts.tenancy import owner_login_for_this_process

    owner_login_for_this_process()


def _requests_under_the_wall() -> None:
    from django.conf import settings

    settings.MIDDLEWARE = ["tests.application_role.ApplicationRoleMiddleware", *settings.MIDDLEWARE]


def _fast_password_hashing() -> None:
    """Passwords hash with MD5 in this process, as Django's testing guide advises: the product's
    PBKDF2 (Django's default, 1,000,000 iterations) takes over half a second here, and the suite
    sets and checks a password for every console member it signs in. What the product uses is
    checked by ``tests/test_password_hashing.py``; servers and workers the suite starts as
    processes of their own (the load harness, ``make demo``) keep the product's setting."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _own_redis_databases_per_xdist_worker() -> None:
    """Under ``pytest -n N`` each process has its own test database (pytest-django names it
    ``test_bulkhead_gwN``) and its own Celery worker on it, so each needs its own broker, result
    store and throttle cache too: Redis databases 2N+2 (broker and results) and 2N+3 (cache) of
    the same server. Without this, one process's worker would take the other's tasks and look for
    their documents in the wrong database. Settings are already loaded (pytest-django loads them
    before any conftest), and nothing has talked to Redis yet: the Celery app reads its
    configuration and Django opens its cache on first use. Workers the suite starts get the same
    URLs (``WorkerProcess``)."""
    number = xdist_worker_number()
    if number is None:
        return
    from django.conf import settings

    from bulkhead.settings import _celery_redis_url, _redis_db

    broker = _redis_db(settings.REDIS_URL, 2 * number + 2)
    settings.REDIS_URL = broker
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = _celery_redis_url(broker)
    settings.CACHES = {**settings.CACHES, "default": {**settings.CACHES["default"],
                                                      "LOCATION": _redis_db(broker, 2 * number + 3)}}


_owner_login_for_test_bodies()
_requests_under_the_wall()
_fast_password_hashing()

# Sources (issue 29): the folders and Git repositories tests make are below this root, the only one a
# source may read; the tests' web server is on loopback, which the operator must allow. Set for this
# process and, through the environment, for every worker it starts.
SOURCE_ROOT = embedded_services.data_dir() / f"test-sources{xdist_suffix()}"


def _sources_for_tests() -> None:
    from django.conf import settings

    SOURCE_ROOT.mkdir(parents=True, exist_ok=True)
    os.environ["BULKHEAD_SOURCE_ROOTS"] = str(SOURCE_ROOT)
    os.environ["BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES"] = "1"
    os.environ["BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES"] = "1"  # the test identity provider listens on loopback
    os.environ["BULKHEAD_SOURCE_CACHE_DIR"] = str(SOURCE_ROOT / ".git-cache")
    settings.BULKHEAD_SOURCE_ROOTS = [str(SOURCE_ROOT)]
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = True
    settings.BULKHEAD_SOURCE_CACHE_DIR = str(SOURCE_ROOT / ".git-cache")


_sources_for_tests()
_own_redis_databases_per_xdist_worker()
# A test that uses one of these runs a real Celery worker, and must say so: @pytest.mark.worker.
WORKER_FIXTURES = {"celery_worker", "worker_factory"}


def _uses_database(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db") or "django_db_setup" in getattr(item, "fixturenames", ()):
        return True
    from django.test import SimpleTestCase

    cls = getattr(item, "cls", None)  # a Django TestCase asks for databases with an attribute
    return cls is not None and issubclass(cls, SimpleTestCase) and bool(cls.databases)


# The db tier runs in several processes that take whole files (``--dist loadfile``) in collection order
# (``--no-loadscope-reorder``): the longest files go first, so no process is left with one of them
# at the end while the others idle. Measured with ``--durations`` (docs/benchmarks.md, "The suite").
LONGEST_FIRST = (
    "test_load_harness.py", "test_console_authorization.py", "test_search_leaks.py", "test_api_schema.py",
    "test_index_versions.py", "test_adversarial.py", "test_console_crawler.py", "test_search.py",
    "test_ingestion_crash.py", "test_sources_worker_killed.py", "test_effective_access.py",
    "browser/test_console_sso.py", "browser/test_console_usability.py", "test_api_search.py",
    "test_fairness.py", "test_api_authorization.py", "test_parse_budget_pipeline.py", "test_tenant_wall.py",
)


class _LongestFilesFirst:
    """Sorts after pytest-django has put each kind of test case in its order (the sort is stable, so
    that order holds inside each file)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        rank = _file_rank(items)
        items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_LongestFilesFirst(), "bulkhead-longest-files-first")


def _file_rank(items: list[pytest.Item]) -> dict[str, tuple[int, int]]:
    missing = [name for name in LONGEST_FIRST if not (ROOT / "tests" / name).is_file()]
    if missing:
        raise pytest.UsageError(f"LONGEST_FIRST names files that do not exist: {missing}")
    counts: dict[str, int] = {}
    for item in items:
        counts[item.nodeid.split("::")[0]] = counts.get(item.nodeid.split("::")[0], 0) + 1
    rank = {}
    for path, count in counts.items():
        listed = [i for i, name in enumerate(LONGEST_FIRST) if path.endswith("/" + name)]
        rank[path] = (listed[0] if listed else len(LONGEST_FIRST), -count)
    return rank


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = []
    for item in items:
        if _uses_database(item):
            item.add_marker(pytest.mark.db)
        if WORKER_FIXTURES & set(getattr(item, "fixturenames", ())) and not item.get_closest_marker("worker"):
            unmarked.append(item.nodeid)
    if unmarked:
        raise pytest.UsageError(
            "these tests use a real Celery worker (celery_worker or worker_factory) but are not marked "
            "@pytest.mark.worker:\n  " + "\n  ".join(unmarked)
        )


@pytest.fixture(autouse=True)
def _fresh_throttle_counts(request):
    """The throttle counts per token id live in Redis, and ids repeat across test databases: clear
    them before each test that uses the database (only those can hold a token). Named as in
    tests.api_fixtures, a plugin whose autouse fixtures reach every test: this one, closer to the
    tests, replaces it, so the unit tier never needs Redis."""
    if request.node.get_closest_marker("db"):
        from django.core.cache import cache

        cache.clear()


@pytest.fixture(scope="session")
def embedded_servers() -> None:
    """The embedded PostgreSQL and Redis, started (or reused) in the data folder; nothing when
    DATABASE_URL and REDIS_URL name servers of their own."""
    embedded_services.ensure_started()


class _DatabaseSetupLock:
    """Held while a process creates and migrates its test database: under ``pytest -n N`` the
    processes share one PostgreSQL, and the migrations alter one cluster-wide role (the
    application's login, accounts/migrations/0002), and PostgreSQL refuses a second concurrent
    update of one catalogue row ("tuple concurrently updated")."""

    def __init__(self, path: Path):
        import fcntl

        self._handle = open(path, "w")
        fcntl.flock(self._handle, fcntl.LOCK_EX)

    def release(self) -> None:
        if not self._handle.closed:
            self._handle.close()  # closing the file drops the lock


@pytest.fixture(scope="session")
def _database_setup_lock(embedded_servers):
    lock = _DatabaseSetupLock(embedded_services.data_dir() / "test-database-setup.lock")
    yield lock
    lock.release()


@pytest.fixture(scope="session")
def django_db_setup(_database_setup_lock, embedded_servers, django_db_setup, django_db_blocker):
    """pytest-django's test database, created once the servers run (settings only name them).

    The audit table refuses TRUNCATE (audit/migrations/0002_append_only.py) unless the session
    says ``bulkhead.audit_truncate = 'allowed'``: this test database alone says so, for every new
    session, so that pytest-django can empty the tables after a transactional test."""
    from django.db import connection

    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            name = connection.ops.quote_name(connection.settings_dict["NAME"])
            cursor.execute(f"ALTER DATABASE {name} SET bulkhead.audit_truncate = 'allowed'")
        connection.close()  # the next session reads the database's setting
    _database_setup_lock.release()
    return django_db_setup


_STARTED: list[WorkerProcess] = []  # every worker this process started (worker_factory)


class WorkerProcess:
    """A real ``celery worker`` subprocess bound to the test database and broker."""

    def __init__(
        self, name: str, extra_env: dict | None = None, concurrency: int = 1, pool: str = "solo", queues: str = ""
    ):
        from django.conf import settings

        self.name = name
        self.queues = queues
        env = dict(os.environ)
        env.update(database_env())  # the application role, as in production; the owner for its owner path
        env["REDIS_URL"] = settings.REDIS_URL
        env["CACHE_URL"] = settings.CACHES["default"]["LOCATION"]
        env["PYTHONUNBUFFERED"] = "1"
        # A worker queues the re-screen of stale chunks when it starts (pipeline.rescreen): here it would
        # re-screen other tests' committed rows while they run. tests/test_screening.py runs the job itself.
        env["BULKHEAD_RESCREEN_AT_WORKER_START"] = "0"
        env.update(extra_env or {})
        self.log_path = embedded_services.data_dir() / f"worker-{name}{xdist_suffix()}.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "bulkhead", "worker", f"--pool={pool}",
                f"--concurrency={concurrency}", "--loglevel=INFO", "-n", f"{name}@%h", "--without-mingle",
                "--without-gossip", *(["-Q", queues] if queues else []),
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = START_WAIT) -> None:
        from bulkhead.celery import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early; see {self.log_path}:\n{self.log_path.read_text()[-3000:]}")
            replies = app.control.ping(timeout=0.5, destination=[f"{self.name}@{os.uname().nodename}"]) or []
            if replies:
                return
        raise RuntimeError(f"worker {self.name} did not answer a ping within {timeout}s; see {self.log_path}")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


@pytest.fixture(scope="session")
def worker_factory(django_db_setup, django_db_blocker):
    """Start extra real workers (e.g. to kill one mid-batch); all are stopped at the end."""
    started = _STARTED

    def start(name: str, **kwargs) -> WorkerProcess:
        with django_db_blocker.unblock():
            worker = WorkerProcess(name, **kwargs)
            started.append(worker)
            worker.wait_ready()
            return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def unserved_queue():
    """Ingestion tasks this test enqueues go to a queue no worker serves, so the test runs the jobs
    itself (``jobs_run``) without racing the session's worker for them: that worker, once started by
    an earlier test, claims whatever reaches the default queue."""
    import uuid

    from bench.private_worker import routed_to

    with routed_to(f"nobody-{uuid.uuid4().hex[:8]}"):
        yield


def _wait_until_idle(workers: list[WorkerProcess], timeout: float = 120) -> None:
    """Until the live workers run nothing, hold nothing prefetched and the queues they serve are
    empty, twice in a row. A task a test set off (a re-derivation after a policy change, a sync a
    second worker resumed) and did not wait for would otherwise still hold row locks when the
    test's database is truncated: PostgreSQL then reports a deadlock. A solo worker answers no
    control message while it runs a task, so silence counts as busy. Gives up quietly after
    ``timeout`` (``_flush_retries_a_deadlock`` is the second line)."""
    from django.conf import settings

    from bulkhead.celery import app

    live = [w for w in workers if w.process.poll() is None]
    if not live:
        return
    queues = {q for w in live for q in (w.queues.split(",") if w.queues else settings.CELERY_TASK_QUEUES)}
    destination = [f"{w.name}@{os.uname().nodename}" for w in live]
    deadline = time.monotonic() + timeout
    quiet = 0
    with app.connection_for_read() as connection:
        client = connection.default_channel.client
        while quiet < 2 and time.monotonic() < deadline:
            inspect = app.control.inspect(destination=destination, timeout=1.0, limit=len(destination))
            active, reserved = inspect.active() or {}, inspect.reserved() or {}
            busy = (len(active) < len(destination) or len(reserved) < len(destination)
                    or any(active.values()) or any(reserved.values()))
            queued = sum(client.llen(name) for name in queues)
            quiet = 0 if busy or queued else quiet + 1
            if quiet < 2:
                time.sleep(0.05)


@pytest.fixture(autouse=True)
def _workers_idle_before_the_flush(request):
    """Set up after the test's database (so torn down before its flush) in tests marked ``worker``."""
    if request.node.get_closest_marker("worker") is None:
        yield
        return
    request.getfixturevalue("_django_db_helper")
    yield
    _wait_until_idle(_STARTED)


@pytest.fixture(scope="session", autouse=True)
def _flush_retries_a_deadlock():
    """A worker's task can still hold a lock when a test's tables are truncated, and take the next one
    after TRUNCATE took the first: PostgreSQL ends the TRUNCATE as a deadlock victim. The worker's
    transaction goes on; the flush, tried again, then empties the database."""
    from django.db import OperationalError
    from django.db.backends.base.operations import BaseDatabaseOperations

    original = BaseDatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        for attempt in range(5):
            try:
                return original(self, sql_list)
            except OperationalError as exc:
                if "deadlock detected" not in str(exc) or attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    BaseDatabaseOperations.execute_sql_flush = execute_sql_flush
    yield
    BaseDatabaseOperations.execute_sql_flush = original


@pytest.fixture(scope="session")
def celery_worker(worker_factory):
    """One real worker for the session. Tests using it must commit (``transaction=True``)."""
    return worker_factory("main")
