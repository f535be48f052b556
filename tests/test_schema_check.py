"""A database with unapplied migrations is refused in one line, before anything uses it.

On a fresh data folder (or a new database that DATABASE_URL names) the project's own commands used to
die with a traceback ("relation "accounts_tenant" does not exist"), and ``make web`` / ``make worker``
started and then failed every request and task. Here a real, empty database is made on the test
PostgreSQL, and ``manage.py`` and the launcher run on it as the user runs them: processes of their own
with DATABASE_URL pointing there, its password never printed. On the migrated test database the same
command runs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

import manage
from bulkhead import schema_check
from bulkhead.embedded_services import database_env, database_url_for
from tests.bounds import START_WAIT

ROOT = Path(__file__).resolve().parent.parent
MARK = "BULKHEAD_TEST_SCHEMA_CHECK_RUN"
# Sent in the URL; the test server trusts its local logins, so it is never checked (one that asks for a
# password gets the real one, below): either way, it must not reach the output.
PASSWORD = "pw-must-not-be-printed-5e1c"
VARIABLES = ("DATABASE_URL", "BULKHEAD_OWNER_DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")


# ----------------------------------------------------------------------------- which commands are checked


@pytest.mark.parametrize(
    ("argv", "checked"),
    [
        (["manage.py", "kb_search", "q", "--tenant", "t", "--as", "a@example.com"], True),
        (["manage.py", "kb_eval", "--golden", "q.jsonl", "--tenant", "t"], True),
        (["manage.py", "kb_tenant", "list"], True),
        (["manage.py", "kb_ingest", "x.md"], True),
        (["manage.py", "kb_search", "--help"], False),  # help needs no table
        # They migrate the database themselves.
        (["manage.py", "kb_demo"], False),
        (["manage.py", "kb_bench", "search"], False),
        # They use no database.
        (["manage.py", "kb_chunk", "a.md"], False),
        (["manage.py", "kb_chunkeval", "--corpora", "c"], False),
        (["manage.py", "kb_transfer"], False),
        # Django's own: they set the database up, show it, or open it as it is.
        (["manage.py", "migrate"], False),
        (["manage.py", "showmigrations"], False),
        (["manage.py", "makemigrations", "--check"], False),
        (["manage.py", "shell"], False),
        (["manage.py", "dbshell"], False),
        (["manage.py"], False),
    ],
)
def test_manage_py_checks_the_migrations_for_its_own_database_commands(argv, checked):
    assert manage.needs_migrated_database(argv) is checked


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({}, "the database in the data folder {data}"),
        ({"DATABASE_URL": f"postgresql://app:{PASSWORD}@db:5432/kb"}, "the database DATABASE_URL names"),
        ({"DATABASE_URL": f"postgresql://app:{PASSWORD}@db/kb", "BULKHEAD_OWNER_DATABASE_URL": f"postgresql://o:{PASSWORD}@db/kb"},
         "the database BULKHEAD_OWNER_DATABASE_URL names"),
    ],
)
def test_the_database_is_named_by_where_it_is_configured_never_by_its_url(monkeypatch, tmp_path, environ, named):
    monkeypatch.setenv("BULKHEAD_DATA_DIR", str(tmp_path))
    for name in ("DATABASE_URL", "BULKHEAD_OWNER_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert schema_check.database_named() == named.format(data=tmp_path.resolve())


# ----------------------------------------------------------------------------- on a real database


def _expected_reason() -> str:
    """What the line says of an empty database: every migration, in the order ``migrate`` applies them."""
    from django.db.migrations.loader import MigrationLoader

    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    plan: list[str] = []
    for leaf in graph.leaf_nodes():
        plan += [f"{app}.{name}" for app, name in graph.forwards_plan(leaf) if f"{app}.{name}" not in plan]
    return (f"the database DATABASE_URL names has {len(plan)} unapplied migrations (first: {plan[0]}); "
            "run `python manage.py migrate` (`make demo` does it)")


@pytest.fixture
def empty_database(django_db_setup, django_db_blocker):
    """A new database on the test server, no table in it: DATABASE_URL for it, with a password."""
    from django.db import connection

    name = f"bulkhead_unmigrated_{uuid.uuid4().hex[:12]}"
    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
        login = {**connection.settings_dict, "NAME": name}
        password = login.get("PASSWORD") or PASSWORD
        try:
            yield database_url_for({**login, "PASSWORD": password}), password
        finally:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _env(tmp_path: Path, run: str, **variables: str) -> dict[str, str]:
    """The environment of a process on a data folder of its own (nothing starts there: both URLs are set)."""
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    return env | {"BULKHEAD_DATA_DIR": str(tmp_path / "data"), "REDIS_URL": settings.REDIS_URL, MARK: run, **variables}


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=START_WAIT)
    except subprocess.TimeoutExpired:  # it started instead of refusing: stop it (and what it started)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=START_WAIT)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def _left_running(run: str) -> list[str]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARK) == run and process.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
        except psutil.Error:
            continue
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _assert_one_line(result: subprocess.CompletedProcess, line: str, password: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    assert password not in output and "postgresql://" not in output, output
    assert result.stdout == "", result.stdout[-2000:]
    assert result.stderr.splitlines() == [line], result.stderr[-4000:]


@pytest.mark.django_db(transaction=True)  # no transaction around the test: CREATE DATABASE runs outside one
@pytest.mark.parametrize(
    "command",
    [
        ["kb_search", "on-call paging", "--tenant", "acme", "--as", "ann@example.com"],
        ["kb_eval", "--golden", "evaluation/suite/questions.jsonl", "--tenant", "acme"],
    ],
    ids=["kb_search", "kb_eval"],
)
def test_a_kb_command_on_an_unmigrated_database_is_refused_in_one_line(empty_database, tmp_path, command):
    url, password = empty_database
    result = _run([sys.executable, "manage.py", *command], _env(tmp_path, "manage", DATABASE_URL=url))
    _assert_one_line(result, f"Not set up: {_expected_reason()}", password)


@pytest.mark.django_db(transaction=True)
def test_a_database_that_does_not_exist_is_one_line_too(empty_database, tmp_path):
    url, password = empty_database
    missing = url.rsplit("/", 1)[0] + "/bulkhead_never_created"
    result = _run([sys.executable, "manage.py", "kb_tenant", "list"], _env(tmp_path, "missing", DATABASE_URL=missing))
    prefix = "Not set up: cannot reach the database DATABASE_URL names: "
    assert result.stderr.startswith(prefix) and 'database "bulkhead_never_created" does not exist' in result.stderr
    _assert_one_line(result, result.stderr.strip(), password)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["web", "worker"])
def test_make_web_and_make_worker_refuse_an_unmigrated_database_starting_nothing(empty_database, tmp_path, kind):
    url, password = empty_database
    port = _free_port()
    env = _env(tmp_path, f"launch-{kind}", DATABASE_URL=url, BULKHEAD_PORT=str(port))
    result = _run([sys.executable, "-m", "bulkhead.launch", kind], env)
    _assert_one_line(result, f"Not started: {_expected_reason()}", password)
    assert _left_running(f"launch-{kind}") == []
    with socket.socket() as probe:  # the port it bound for the web server is free again
        probe.bind(("127.0.0.1", port))


@pytest.mark.django_db(transaction=True)  # its tables are committed: another process reads them
def test_on_the_migrated_database_the_command_runs(tmp_path):
    logins = database_env()  # the test database, migrated: the application's login and the owner's
    schema_check.require_migrated()  # what the launcher asks before it starts the web server or workers
    result = _run([sys.executable, "manage.py", "kb_tenant", "list"], _env(tmp_path, "migrated", **logins))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "Not set up" not in output and "Traceback" not in output, output[-4000:]
