"""Starting and stopping what ``make demo``, ``make web`` and ``make worker`` run.

**Pre-flight** (:func:`preflight`), before anything starts -- no server, no worker, no migration:

* one of each per data folder: the web server and the workers take a lock in the data folder
  (``web.lock``, ``worker.lock``; the demo takes both) for as long as they run, so a second demo on
  the same folder is refused with one line naming the running one (its pid and URL) and what to do;
* the port: it is bound here, by the launcher, and handed to gunicorn (``--bind fd://N``), so a
  port in use is one line naming the program that holds it, and the port stays ours from the check
  to the serving (no window in which another program can take it, no retry loop in gunicorn).

A refusal is :class:`Refused`; the entry points print ``Not started: <reason>`` and exit 1.

``make web`` and ``make worker`` then check the database (:func:`database_ready`): migrated, or
refused in one line naming what to do -- a web server or workers on a database without its tables
would start and then fail every request and task. The demo migrates it instead.

**Supervision** (:class:`Supervisor`): every process is started in a process group of its own and
with a parent-death signal, and the supervisor ends them all -- with whatever they started (a
gunicorn worker, a Celery pool or beat process, a parse server) -- whichever way it stops: Ctrl-C,
SIGTERM or SIGHUP (:class:`Stopped`), one of them exiting (:class:`ChildExited`), an error during
start-up, or the supervisor itself killed (SIGKILL: the parent-death signal, Linux). The embedded
PostgreSQL and Redis are not its children: they stay up for reuse (``make stop`` stops them).

Run as a module (the Makefile does)::

    python -m bulkhead.launch web|worker|stop
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bulkhead import embedded_services, schema_check

BASE_DIR = embedded_services.BASE_DIR
WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1"}

# The web server: gunicorn with a fixed number of threads, each holding at most one persistent
# database connection (CONN_MAX_AGE), so the web side never holds more than WEB_WORKERS *
# WEB_THREADS of PostgreSQL's connections (100 by default), whatever the load; requests beyond the
# threads wait in gunicorn's queue. Static files come from WhiteNoise.
WEB_WORKERS = 2
WEB_THREADS = 4


class Refused(Exception):
    """A pre-flight check failed (one line: what holds it, what to do); nothing was started."""


class Stopped(Exception):
    """The supervisor was asked to stop (Ctrl-C, SIGTERM, SIGHUP)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class ChildExited(Exception):
    """A supervised process ended on its own: the supervisor stops the others."""

    def __init__(self, name: str, returncode: int, log: str | None):
        self.name, self.returncode, self.log = name, returncode, log
        if returncode < 0:
            how = f"was killed by {signal.Signals(-returncode).name}"
        else:
            how = f"exited with status {returncode}"
        super().__init__(f"{name} {how}" + (f" (its log: {log})" if log else ""))


# ----------------------------------------------------------------------------- addresses


def base_url(host: str, port: int) -> str:
    """The URL a browser on this machine opens for a server listening on ``host``:``port``."""
    host = WILDCARD_HOSTS.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def web_command(listener_fd: int, *, workers: int = WEB_WORKERS, threads: int = WEB_THREADS) -> list[str]:
    """gunicorn serving on the socket the launcher bound (``fd://``); no control socket (the
    default one, ``$XDG_RUNTIME_DIR/gunicorn.ctl`` or ``~/.gunicorn/gunicorn.ctl``, would be shared
    with every other gunicorn of the user, and nothing here uses ``gunicornc``)."""
    return [
        sys.executable, "-m", "gunicorn", "bulkhead.wsgi:application", "--bind", f"fd://{listener_fd}",
        "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads),
        "--timeout", "120", "--graceful-timeout", "10", "--no-control-socket",
    ]


# ----------------------------------------------------------------------------- pre-flight

# What each launcher runs; one of each per data folder. The demo runs both.
ROLES = ("web", "worker")
HOLDERS = {"demo": "a demo", "web": "a web server (`make web`)", "worker": "the workers (`make worker`)"}


def _lock_path(role: str) -> Path:
    return embedded_services.data_dir() / f"{role}.lock"


def _holder(handle) -> dict:
    handle.seek(0)
    try:
        record = json.loads(handle.read() or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _held_message(record: dict, command: str) -> str:
    kind, pid, urls = record.get("kind"), record.get("pid"), record.get("urls") or []
    who = HOLDERS.get(kind, "another Bulkhead launcher")
    where = f"{who} is already running on this data folder ({embedded_services.data_path()})"
    where += f" as pid {pid}" if isinstance(pid, int) else ""
    where += f", serving {urls[0]}/" if urls else ""
    action = f"open {urls[0]}/, or stop it first" if urls and kind in ("demo", "web") else "stop it first"
    own = "BULKHEAD_DATA_DIR" if command == "make worker" else "BULKHEAD_DATA_DIR and BULKHEAD_PORT"
    return f"{where}: {action} (Ctrl-C where it runs, or `make stop`); to run {command} beside it, give it its own {own}"


@dataclass
class Preflight:
    """What a launcher holds while it runs: its locks in the data folder and, to serve, its bound port."""

    locks: list = field(default_factory=list)
    listener: socket.socket | None = None

    def release(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        for handle in self.locks:
            with contextlib.suppress(OSError):
                handle.truncate(0)
            handle.close()  # closing the file releases its flock
        self.locks = []

    def __enter__(self) -> Preflight:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def preflight(kind: str, roles: Sequence[str], *, host: str | None = None, port: int | None = None,
              command: str = "make demo") -> Preflight:
    """Claim ``roles`` on this data folder and, given a port, bind ``host``:``port``; else :class:`Refused`.

    ``kind`` names the launcher in the locks ("demo", "web", "worker"); ``command`` is how the user
    starts it again, for the advice in a refusal. Nothing is started, and nothing is held on refusal."""
    held = Preflight()
    try:
        for role in roles:
            handle = open(_lock_path(role), "a+")  # noqa: SIM115 (held until release)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                record = _holder(handle)
                handle.close()
                raise Refused(_held_message(record, command)) from None
            held.locks.append(handle)
        if port is not None:
            held.listener = listen(host or "127.0.0.1", port, command=command)
        urls = [base_url(host or "127.0.0.1", port)] if port is not None else []
        record = json.dumps({"kind": kind, "pid": os.getpid(), "urls": urls, "started": time.time()})
        for handle in held.locks:
            handle.seek(0)
            handle.truncate()
            handle.write(record)
            handle.flush()
    except BaseException:
        held.release()
        raise
    return held


def database_ready() -> None:
    """Start (or reuse) the embedded servers the web server and the workers would start, and check that
    the database is migrated (:mod:`bulkhead.schema_check`); else :class:`Refused`."""
    import django

    django.setup()
    embedded_services.ensure_started()
    try:
        schema_check.require_migrated()
    except schema_check.NotSetUp as exc:
        raise Refused(str(exc)) from None


def listen(host: str, port: int, *, command: str = "make demo") -> socket.socket:
    """A socket bound to ``host``:``port`` for gunicorn to inherit, else :class:`Refused` naming
    what holds the port (or why the address cannot be used) and what to do."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise Refused(f"BULKHEAD_HOST={host!r} is not a host name or address this machine knows ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn does: TIME_WAIT is no obstacle
    try:
        sock.bind(address)
        # Listening is what takes the port: two sockets with SO_REUSEADDR may both be bound to it
        # until one listens. Connections wait in the backlog until gunicorn accepts them.
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            free = _free_port_after(host, port)
            other = f": BULKHEAD_PORT={free} {command}" if free else " (BULKHEAD_PORT)"
            raise Refused(
                f"port {port} on {host} is in use by {port_holder(port)}: stop that, or use another port{other}"
            ) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise Refused(f"cannot listen on {host}:{port}: {host} is not an address of this machine (BULKHEAD_HOST)") from None
        raise Refused(f"cannot listen on {host}:{port}: {exc.strerror} (BULKHEAD_HOST, BULKHEAD_PORT)") from None
    return sock


def _free_port_after(host: str, port: int) -> int | None:
    for candidate in range(port + 1, min(port + 50, 65536)):
        with contextlib.suppress(OSError), socket.socket(socket.getaddrinfo(host, candidate)[0][0]) as probe:
            probe.bind((host, candidate))
            return candidate
    return None


def port_holder(port: int) -> str:
    """Which process listens on ``port`` ("pid N (command, in folder)"), as far as this user may see."""
    import psutil

    try:
        listening = [
            c.pid for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid
        ]
    except (psutil.Error, OSError):
        listening = []
    for pid in listening:
        with contextlib.suppress(psutil.Error, OSError):
            process = psutil.Process(pid)
            argv = process.cmdline() or [process.name()]
            text = " ".join([Path(argv[0]).name, *argv[1:]])
            text = text if len(text) <= 90 else text[:87] + "..."
            with contextlib.suppress(psutil.Error, OSError):
                text += f", in {process.cwd()}"
            return f"pid {pid} ({text})"
    return "another program (one this user may not inspect)"


# ----------------------------------------------------------------------------- supervision


def _parent_death_signal() -> Callable[[], None]:
    """For ``preexec_fn``: the child gets SIGTERM when this process dies, even by SIGKILL (Linux)."""
    parent = os.getpid()
    prctl = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it

    def in_child() -> None:
        if prctl is not None:
            prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the line above: no signal will come
            os._exit(1)

    return in_child


@dataclass
class _Child:
    name: str
    process: subprocess.Popen
    log: str | None


def _group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    import psutil

    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
    return members


class Supervisor:
    """Runs processes and ends them all together: ``with Supervisor() as s: s.start(...); s.wait()``.

    Inside the ``with``, SIGINT, SIGTERM and SIGHUP raise :class:`Stopped`; :meth:`check` (called by
    :meth:`sleep` and :meth:`wait`) raises :class:`ChildExited` when a process has ended. Leaving
    the ``with`` -- normally or by any exception -- stops every process: SIGTERM to each, then,
    after ``stop_seconds``, SIGKILL; then whatever is left in their process groups."""

    def __init__(self, *, stop_seconds: float = 15.0, leftover_seconds: float = 5.0):
        self.children: list[_Child] = []
        self.stop_seconds, self.leftover_seconds = stop_seconds, leftover_seconds
        self._stopping = False
        self._hurry = False
        self._previous: dict[int, object] = {}

    # -- the with statement and signals

    def __enter__(self) -> Supervisor:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)

    def _on_signal(self, signum, frame) -> None:
        if self._stopping:
            self._hurry = True  # a second Ctrl-C while stopping: kill what is left now
            return
        raise Stopped(signum)

    # -- running

    def start(self, name: str, argv: list[str], *, log: str | None = None, **popen) -> subprocess.Popen:
        """Start ``argv`` (``popen``: env, cwd, stdout, stderr, pass_fds) in a process group of its own."""
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, process_group=0, preexec_fn=_parent_death_signal(), **popen
        )
        self.children.append(_Child(name, process, log))
        return process

    def check(self) -> None:
        for child in self.children:
            if child.process.poll() is not None:
                raise ChildExited(child.name, child.process.returncode, child.log)

    def sleep(self, seconds: float) -> None:
        self.check()
        time.sleep(seconds)
        self.check()

    def wait(self) -> None:
        """Until a signal or a process ends (both raise)."""
        while True:
            self.sleep(0.5)

    # -- stopping

    def stop(self) -> None:
        self._stopping = True
        for child in self.children:
            if child.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_seconds
        for child in self.children:
            while child.process.poll() is None and time.monotonic() < deadline and not self._hurry:
                time.sleep(0.1)
            if child.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
                child.process.wait()
        # What the processes started and left behind (a killed worker's pool, beat or parse server).
        for child in self.children:
            self._end_group(child.process.pid)
        self.children = []

    def _end_group(self, pgid: int) -> None:
        if not _group_members(pgid):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.leftover_seconds
        while _group_members(pgid) and time.monotonic() < deadline and not self._hurry:
            time.sleep(0.1)
        if _group_members(pgid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)


# ----------------------------------------------------------------------------- make web, make worker, make stop


def worker_commands() -> list[tuple[str, list[str]]]:
    """``make worker``'s two workers (see kb/jobs.py, enqueue_jobs): "fast" serves the interactive
    lane alone (with beat), so a large document or a batch import on the bulk lane never holds up
    a small upload; "bulk" serves both lanes."""
    from django.conf import settings

    worker = [sys.executable, "-m", "celery", "-A", "bulkhead", "worker", "--loglevel=INFO", "--concurrency=1"]
    return [
        ("the worker fast@", [*worker, "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "-n", "fast@%h", "--beat"]),
        ("the worker bulk@", [*worker, "-n", "bulk@%h"]),
    ]


def _say(text: str, stream=sys.stdout) -> None:
    print(text, file=stream, flush=True)


def run(kind: str) -> int:
    """``make web`` or ``make worker``: pre-flight, then run until Ctrl-C or a process ends."""
    from django.conf import settings

    command = f"make {kind}"
    try:
        if kind == "web":
            held = preflight("web", ["web"], host=settings.BULKHEAD_HOST, port=settings.BULKHEAD_PORT, command=command)
        else:
            held = preflight("worker", ["worker"], command=command)
        try:
            database_ready()  # after the locks and the port: a refusal for those starts nothing
        except BaseException:
            held.release()
            raise
    except Refused as exc:
        _say(f"Not started: {exc}", sys.stderr)
        return 1
    try:
        with held, Supervisor() as supervisor:
            if kind == "web":
                fd = held.listener.fileno()
                supervisor.start("the web server (gunicorn)", web_command(fd), pass_fds=(fd,), cwd=BASE_DIR)
                held.listener.close()  # gunicorn holds the port now
                held.listener = None
                url = base_url(settings.BULKHEAD_HOST, settings.BULKHEAD_PORT)
                _say(f"serving {url}/ (BULKHEAD_HOST={settings.BULKHEAD_HOST}, BULKHEAD_PORT={settings.BULKHEAD_PORT}); "
                     "Ctrl-C stops it")
            else:
                for name, argv in worker_commands():
                    supervisor.start(name, argv, cwd=BASE_DIR)
                _say("two workers (fast@: small uploads, with beat; bulk@: both lanes); Ctrl-C stops both")
            supervisor.wait()
    except Stopped:
        _say(f"stopped {'the web server' if kind == 'web' else 'the workers'}")
        return 0
    except ChildExited as exc:
        _say(f"{exc}; stopped the rest", sys.stderr)
        return 1
    return 0


def stop_running(*, seconds: float = 60.0) -> list[str]:
    """Ask every launcher running on this data folder (demo, ``make web``, ``make worker``) to stop,
    and wait for each to let go of its locks; one line per launcher."""
    said, pids = [], set()
    for role in ROLES:
        path = embedded_services.data_path() / f"{role}.lock"
        if not path.exists():
            continue
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                record = _holder(handle)
            else:
                continue  # free: nothing runs
        pid = record.get("pid")
        if not isinstance(pid, int) or pid in pids:
            continue
        pids.add(pid)
        who = HOLDERS.get(record.get("kind"), "a launcher")
        if not _has_open(pid, path):  # the file names a process that does not hold it: signal no one
            said.append(f"{path} is locked, but not by pid {pid}, which it names: not stopping anything")
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + seconds
        while _locked(path) and time.monotonic() < deadline:
            time.sleep(0.2)
        said.append(f"{who}, pid {pid}: " + (f"still running after {seconds:.0f} s" if _locked(path) else "stopped"))
    return said


def _has_open(pid: int, path: Path) -> bool:
    import psutil

    try:
        return any(Path(f.path) == path for f in psutil.Process(pid).open_files())
    except (psutil.Error, OSError):
        return False


def _locked(path: Path) -> bool:
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    command = argv[1] if len(argv) > 1 else ""
    if command in ("web", "worker"):
        return run(command)
    if command == "stop":
        for line in stop_running():
            print(line)
        return embedded_services.main(["", "stop"])
    print(f"usage: python -m bulkhead.launch web|worker|stop (got {command!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
