"""The embedded servers start where they are needed, never on import.

Settings only read the environment: with DATABASE_URL / REDIS_URL unset they name the
embedded servers' unix sockets in the data folder without starting them. ``manage.py``
starts them for the commands that talk to them, not for ``kb_chunk`` or ``kb_chunkeval``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import manage
from bulkhead import embedded_services
from bulkhead.settings import _celery_redis_url, _redis_db
from tests.bounds import START_WAIT

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "security-policy.md"


def _env_without_servers(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env["BULKHEAD_DATA_DIR"] = str(data)
    return env


def _assert_nothing_started(data: Path) -> None:
    created = sorted(p.name for p in data.iterdir())
    assert not (data / "pg").exists(), f"a PostgreSQL cluster was created: {created}"
    assert not (data / "redis").exists(), f"a Redis server was started: {created}"
    assert created == []


@pytest.fixture
def empty_data_dir(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    yield data
    # Only reached with something started (the old behaviour): leave no server behind.
    if any(data.iterdir()):
        subprocess.run(
            [sys.executable, "-m", "bulkhead.embedded_services", "stop"], cwd=ROOT, env=_env_without_servers(data),
            capture_output=True, timeout=START_WAIT,
        )


def test_kb_chunk_starts_no_server(empty_data_dir):
    result = subprocess.run(
        [sys.executable, "manage.py", "kb_chunk", str(SAMPLE), "--jsonl"],
        cwd=ROOT, env=_env_without_servers(empty_data_dir), capture_output=True, text=True, timeout=START_WAIT,
    )
    assert result.returncode == 0, result.stderr
    assert '"heading_path"' in result.stdout
    _assert_nothing_started(empty_data_dir)


def test_importing_settings_and_the_celery_app_starts_nothing(empty_data_dir):
    script = (
        "import django; django.setup()\n"
        "from django.conf import settings\n"
        "from bulkhead.celery import app\n"
        "print(settings.DATABASES['default']['HOST']); print(settings.REDIS_URL); print(app.conf.broker_url)\n"
    )
    env = _env_without_servers(empty_data_dir) | {"DJANGO_SETTINGS_MODULE": "bulkhead.settings"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=START_WAIT
    )
    assert result.returncode == 0, result.stderr
    host, redis_url, broker_url = result.stdout.split()
    data = empty_data_dir.resolve()
    assert host == str(data / "pg")
    assert redis_url == f"unix://{data}/redis/redis.sock?db=0"
    assert broker_url == f"redis+socket://{data}/redis/redis.sock?virtual_host=0"
    _assert_nothing_started(empty_data_dir)


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        (["manage.py", "kb_chunk", "a.md"], False),
        (["manage.py", "kb_chunkeval", "--corpora", "c"], False),
        (["manage.py"], False),
        (["manage.py", "--version"], False),
        (["manage.py", "help", "migrate"], False),
        (["manage.py", "check"], False),
        (["manage.py", "check", "--database", "default"], True),
        (["manage.py", "migrate"], True),
        (["manage.py", "kb_search", "q", "--tenant", "t"], True),
        (["manage.py", "kb_demo"], False),  # it starts them itself, after its pre-flight checks
    ],
)
def test_manage_py_starts_servers_only_for_commands_that_use_them(argv, starts):
    assert manage.needs_servers(argv) is starts


# ----------------------------------------------------------------------------- URLs


def test_embedded_urls_point_into_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("BULKHEAD_DATA_DIR", str(tmp_path / "a b"))
    data = (tmp_path / "a b").resolve()
    assert embedded_services.postgres_url() == f"postgresql://postgres:@/bulkhead?host={data}/pg".replace(" ", "%20")
    assert embedded_services.redis_url() == f"unix://{data}/redis/redis.sock?db=0".replace(" ", "%20")
    assert not (tmp_path / "a b").exists()


@pytest.mark.parametrize(
    ("url", "cache", "celery"),
    [
        ("redis://redis:6379/0", "redis://redis:6379/1", "redis://redis:6379/0"),  # docker-compose
        ("redis://:pw@10.0.0.5:6380/3", "redis://:pw@10.0.0.5:6380/1", "redis://:pw@10.0.0.5:6380/3"),
        ("unix:///srv/d/redis.sock?db=0", "unix:///srv/d/redis.sock?db=1", "redis+socket:///srv/d/redis.sock?virtual_host=0"),
        ("unix:///srv/d/redis.sock", "unix:///srv/d/redis.sock?db=1", "redis+socket:///srv/d/redis.sock"),
        ("unix:///srv/a%20b/r.sock?db=2", "unix:///srv/a%20b/r.sock?db=1", "redis+socket:///srv/a%20b/r.sock?virtual_host=2"),
    ],
)
def test_one_redis_url_for_cache_broker_and_results(url, cache, celery):
    assert _redis_db(url, 1) == cache
    assert _celery_redis_url(url) == celery


def test_the_libraries_read_the_socket_urls_as_the_socket():
    import redis
    from celery.backends.redis import RedisBackend
    from kombu import Connection
    from kombu.utils.url import url_to_parts

    from bulkhead.celery import app

    url = "unix:///srv/a%20b/r.sock?db=0"
    assert redis.ConnectionPool.from_url(_redis_db(url, 1)).connection_kwargs["path"] == "/srv/a b/r.sock"
    assert redis.ConnectionPool.from_url(_redis_db(url, 1)).connection_kwargs["db"] == 1
    broker = Connection(_celery_redis_url(url))  # kombu hands "socket://..." to the redis transport, which
    scheme, *_, path, query = url_to_parts(broker.hostname)  # reads it with url_to_parts (Channel._connparams)
    assert (broker.transport_cls, scheme, "/" + path, query) == ("redis", "socket", "/srv/a b/r.sock", {"virtual_host": "0"})
    backend = RedisBackend(app=app, url=_celery_redis_url(url).removeprefix("redis+"))
    assert (backend.connparams["path"], backend.connparams["db"]) == ("/srv/a b/r.sock", 0)


def test_only_the_test_folder_asks_for_a_non_durable_server(monkeypatch, tmp_path):
    """``make test`` sets BULKHEAD_PG_NON_DURABLE=1 for its throwaway folder: commits then wait for no disk
    flush. Without it (the demo, ``make web``) the server keeps PostgreSQL's durable defaults."""
    (tmp_path / "postgresql.conf").write_text("port = 5432\n")
    monkeypatch.delenv("BULKHEAD_PG_NON_DURABLE", raising=False)
    embedded_services._write_settings(tmp_path)
    durable = (tmp_path / "bulkhead.conf").read_text()
    assert "shared_buffers" in durable and "fsync" not in durable and "synchronous_commit" not in durable
    assert (tmp_path / "postgresql.conf").read_text().count("include_if_exists = 'bulkhead.conf'") == 1
    monkeypatch.setenv("BULKHEAD_PG_NON_DURABLE", "1")
    embedded_services._write_settings(tmp_path)
    fast = (tmp_path / "bulkhead.conf").read_text()
    for line in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
        assert line in fast.splitlines(), line
    assert (tmp_path / "postgresql.conf").read_text().count("include_if_exists = 'bulkhead.conf'") == 1


def test_a_socket_path_too_long_fails_with_a_clear_message(monkeypatch, tmp_path):
    deep = tmp_path / ("d" * 100)
    monkeypatch.setenv("BULKHEAD_DATA_DIR", str(deep))
    for start in (embedded_services.ensure_postgres, embedded_services.ensure_redis):
        with pytest.raises(RuntimeError, match="Point BULKHEAD_DATA_DIR at a shorter folder"):
            start()
    assert not deep.exists()


# ----------------------------------------------------------------------------- the running servers


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_healthz_reaches_database_broker_and_worker(celery_worker, client):
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "ok"


@pytest.mark.django_db
def test_a_healthz_503_is_logged_at_info_naming_what_failed_never_as_an_error(client, caplog, monkeypatch, tmp_path):
    """A readiness probe asks while the workers start: its 503 is an answer, not an error (the demo's
    start printed a dozen ``ERROR django.request Service Unavailable: /healthz``). The broker here
    really is unreachable: a unix socket nobody listens on."""
    import logging

    from bulkhead import health
    from bulkhead.celery import app

    monkeypatch.setattr(app.conf, "broker_write_url", f"redis+socket://{tmp_path}/nobody-listens.sock")
    monkeypatch.setattr(health, "_last_failing", ())  # this process's last answer: healthy
    with caplog.at_level(logging.DEBUG):
        first, second = client.get("/healthz"), client.get("/healthz")
    assert first.status_code == second.status_code == 503
    failing = first.json()["failing"]
    assert "broker" in failing
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    lines = [r for r in caplog.records if "/healthz" in r.getMessage()]
    # Once at INFO with each failing check and why; the same again (the next probe) at DEBUG.
    assert [r.levelname for r in lines] == ["INFO", "DEBUG"], [(r.levelname, r.getMessage()) for r in lines]
    assert all(f"{name}: {first.json()[name]}" in lines[0].getMessage() for name in failing), lines[0].getMessage()
